"""What runs a built emulation: the live pacer, the emulator's own Lambda_max, health warnings, drills and their scorecard."""
