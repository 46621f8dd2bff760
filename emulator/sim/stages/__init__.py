"""The request path: instance pools, prefill and decode stages, the KV link, a PD region and a PrfaaS site."""
