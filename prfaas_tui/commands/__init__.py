"""One module per subcommand; each exposes `add_parser(subparsers)` and `main(args) -> int`."""
