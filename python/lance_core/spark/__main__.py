"""`python -m lance_core.spark [--port 15002] [--host localhost] [--master local[*]]`: start
a Spark Connect server in the foreground with lance_core's JVM reader (see
`lance_core.spark.connect_server_command`); its Python workers run this interpreter."""

import argparse
import os
import sys

from . import connect_server_command


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m lance_core.spark", description=__doc__)
    ap.add_argument("--port", type=int, default=15002)
    ap.add_argument("--host", default="localhost")
    ap.add_argument("--master", default="local[*]")
    args = ap.parse_args()
    command = connect_server_command(args.port, args.host, args.master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
