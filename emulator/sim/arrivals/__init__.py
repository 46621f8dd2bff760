"""Where requests come from: Poisson, Gamma, on/off and trace arrivals, and multi-turn sessions with prefix reuse."""
