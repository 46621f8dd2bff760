"""prfaas-tui: the Textual dashboard and command line for the PrfaaS-PD emulator and model."""

__version__ = "0.1.0"
