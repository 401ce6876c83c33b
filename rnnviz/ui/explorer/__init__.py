"""The Hidden-cell explorer page: model and text choices, traces, and its sections."""
