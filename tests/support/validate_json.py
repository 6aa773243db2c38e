"""Validates JSON files against a JSON Schema with the `jsonschema` package (a validator nobody on
this project wrote). Usage: validate_json.py SCHEMA json|jsonl FILE...

Prints one line per problem (file[:line]: path: message) and exits 1 when there is any; exits 3
when `jsonschema` is not installed, so the caller can skip and say why."""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("the Python package jsonschema is not installed (apt install python3-jsonschema)")
    sys.exit(3)

schema_path, kind, *files = sys.argv[1:]
with open(schema_path) as f:
    schema = json.load(f)
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
problems = 0
documents = 0
for path in files:
    with open(path) as f:
        text = f.read()
    docs = [(None, text)] if kind == "json" else [
        (n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    for n, doc in docs:
        documents += 1
        where = path if n is None else f"{path}:{n}"
        for error in validator.iter_errors(json.loads(doc)):
            problems += 1
            location = "/".join(str(p) for p in error.absolute_path) or "(root)"
            print(f"{where}: {location}: {error.message}")
print(f"{documents} documents, {problems} problems", file=sys.stderr)
sys.exit(1 if problems else 0)
