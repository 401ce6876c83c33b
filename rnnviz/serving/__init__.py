"""What a class's server needs around the character model: live runs (``live``), training slots (``slots``), the
race (``race``), the cool-down taken when a run stops (``cooldown``), the run store (``durable``), where runs train
(``backend``, ``ray_backend``), and the settings that choose all of it (``settings``)."""
