"""Prefill as a Service across many sites: the topology's config objects (`spec`), the routing
bound as a linear program with shadow prices (`bound`) and the threshold policy on a topology
(`policy`). `spec` imports only the model's data types, so the simulator may import it."""
