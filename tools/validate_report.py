#!/usr/bin/env python3
"""Validate a memra --json report against manifests/report.schema.json.

    tools/validate_report.py FILE|-   [--schema SCHEMA]

FILE is a report printed by `memra gate … --json` or `memra parity … --json` (`-` reads stdin).
Exit 0: valid ("valid: FILE" on stdout). Exit 1: not valid; stderr names the JSON path of the first
error (the most specific one jsonschema finds) and why, e.g. `$.stages[3].result: 'MAYBE' is not
one of ['PASS', 'FAIL']`. Exit 2: usage, an unreadable file, text that is not JSON, or a missing
`jsonschema` package (install it with tools/oracle/setup-venv.sh and run this with the venv's python).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SCHEMA = os.path.join(HERE, "..", "manifests", "report.schema.json")


def usage(msg):
    print(f"validate_report: {msg}", file=sys.stderr)
    print("usage: validate_report.py FILE|- [--schema SCHEMA]", file=sys.stderr)
    return 2


def json_path(parts):
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def main(argv):
    args, schema_path = [], DEFAULT_SCHEMA
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if a == "--schema":
            if i + 1 >= len(argv):
                return usage("--schema needs a path")
            schema_path = argv[i + 1]
            i += 2
            continue
        if a.startswith("-") and a != "-":
            return usage(f"unknown option {a}")
        args.append(a)
        i += 1
    if len(args) != 1:
        return usage("expected exactly one report file (or -)")
    try:
        import jsonschema
    except ImportError:
        print("validate_report: the python package 'jsonschema' is missing; run tools/oracle/setup-venv.sh and use "
              "the venv's python", file=sys.stderr)
        return 2
    name = args[0]
    try:
        text = sys.stdin.read() if name == "-" else open(name, encoding="utf-8").read()
    except OSError as e:
        print(f"validate_report: cannot read {name}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        report = json.loads(text)
    except ValueError as e:
        print(f"validate_report: {name} is not JSON: {e}", file=sys.stderr)
        return 2
    try:
        schema = json.load(open(schema_path, encoding="utf-8"))
    except (OSError, ValueError) as e:
        print(f"validate_report: cannot load schema {schema_path}: {e}", file=sys.stderr)
        return 2
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    validator = validator_cls(schema)
    errors = list(validator.iter_errors(report))
    if not errors:
        print(f"valid: {name}")
        return 0
    # The most specific error (deepest path, following if/then and $ref into the failing branch).
    best = jsonschema.exceptions.best_match(errors)
    while best.context:
        best = jsonschema.exceptions.best_match(best.context)
    print(f"invalid: {name}: {json_path(best.absolute_path)}: {best.message}", file=sys.stderr)
    if len(errors) > 1:
        print(f"validate_report: {len(errors)} top-level errors in all", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
