"""`python -m pipelines` and the `pipelines` script. The command's modules are imported inside the interrupt
handler, so Ctrl-C during the (slow) import of the compiler bindings is one line too, not a traceback."""

import sys


def main() -> int:
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        print("pipelines: error: interrupted.", file=sys.stderr)
        return 130
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
