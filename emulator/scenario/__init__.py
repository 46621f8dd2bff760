"""The scenario layer: what a preset, a drill or a command line says, as typed, validated config
objects. Defaults live only in the dataclasses here; the simulator receives these objects and
never reads TOML itself."""
