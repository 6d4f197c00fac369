# SPDX-License-Identifier: MIT
"""What the CPU suite's Python checks share: named expectations with a summary, and JSON Schema
validators for cuctx's documents (docs/schema/, which refer to common.schema.json)."""
import json
import os
import sys

failures = []


def expect(name, condition, detail=""):
    """Prints the check as ok or FAILED (with `detail`), and remembers a failure."""
    print(("ok     " if condition else "FAILED ") + name, flush=True)
    if not condition:
        failures.append(name)
        if detail:
            print("       " + str(detail).replace("\n", "\n       "))


def fits_columns(text, width=80):
    """True when every line of `text` fits `width` columns, but for an absolute path at the end of a
    line: tables wrap at spaces and keep a path whole so that it can be copied, and where the
    checks run decides how long the paths are."""
    def fits(line):
        words = line.split()
        path = words[-1] if words and words[-1].startswith("/") else ""
        return len(line) - len(path) <= width
    return all(fits(line) for line in text.splitlines())


def finish():
    """Prints how many checks failed and exits 1 if any did."""
    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)


def _jsonschema():
    try:
        import jsonschema
    except ImportError:
        sys.exit("the CLI checks need python3-jsonschema (apt-get install python3-jsonschema)")
    return jsonschema


def load_store(schema_dir):
    """Every schema in schema_dir, checked, by its $id."""
    jsonschema = _jsonschema()
    store = {}
    for name in os.listdir(schema_dir):
        if name.endswith(".schema.json"):
            with open(os.path.join(schema_dir, name)) as f:
                schema = json.load(f)
            jsonschema.Draft202012Validator.check_schema(schema)
            store[schema["$id"]] = schema
    return store


def validator(store, name):
    """A validator for the schema whose file is `name`, resolving references within the store."""
    jsonschema = _jsonschema()
    schema = next(s for s in store.values() if s["$id"].endswith("/" + name))
    try:
        from referencing import Registry, Resource  # jsonschema 4.18 and later
        registry = Registry().with_resources([(i, Resource.from_contents(s)) for i, s in store.items()])
        return jsonschema.Draft202012Validator(schema, registry=registry)
    except ImportError:  # Debian 12's jsonschema 4.10
        return jsonschema.Draft202012Validator(schema, resolver=jsonschema.RefResolver.from_schema(schema, store=store))
