"""The Live training page: settings, corpus, the pending run, the run's controls, watching and sampling."""
