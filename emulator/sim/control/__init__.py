"""The scheduler: both timescales (the routing, the role conversions) on any topology."""
