"""atelier: a command-line client for the AtelierEval REST API, on the standard library only."""
