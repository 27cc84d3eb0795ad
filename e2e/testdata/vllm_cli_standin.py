#!/usr/bin/env python3
"""A stand-in for the vllm CLI, for the bare-vLLM probe lane, that refuses
what the pinned vLLM refuses:

    vllm serve [MODEL] [flags]   serves vLLM's API with a prefix cache
                                 (vllm_cache_standin.py) on --port; with a
                                 --kv-transfer-config, a KV connector's
                                 tier behind it
    vllm bench serve [flags]     sends the prompts its dataset makes
                                 (random with --random-prefix-len, or
                                 prefix_repetition: facts
                                 bench_serve.shared_prefix) to the server
                                 once kvsweep's scraper has read it, then,
                                 once the scraper has read it again, writes
                                 a real bench serve output ($STANDIN_BENCH)
                                 as --result-dir/--result-filename (with
                                 --save-result, as vLLM does)

What vLLM accepts is not written here: $STANDIN_FACTS names a directory of
lists written from upstream/facts by the e2e tests (standin_flags_test.go):

    serve.flags, bench_serve.flags   FLAG KIND [ALIAS...] a line; KIND is
                                     value, store_true, optional (argparse's
                                     BooleanOptionalAction: --no-FLAG too) or
                                     either (a value if one follows)
    datasets                         bench serve's --dataset-name choices
    connectors                       the connectors vLLM's factory registers
    kv_fields, kv_roles              KVTransferConfig's fields, kv_role's
                                     choices

Refusals are vLLM's own, read from its source at the pinned commit
(vllm/utils/argparse_utils.py, vllm/engine/arg_utils.py,
vllm/config/kv_transfer.py, vllm/distributed/kv_transfer/kv_connector/
factory.py):
  - a flag the release lacks, or a stray argument: the top-level parser's
    "vllm: error: unrecognized arguments: ...", exit 2;
  - a bad value (--dataset-name outside its choices, a missing value, a
    --kv-transfer-config pydantic rejects: bad JSON, an unknown field, a
    kv_role outside the choices, kv_connector without kv_role): the
    subcommand parser's "vllm serve: error: argument ...", exit 2;
  - a connector that is neither registered nor given a
    kv_connector_module_path: the factory's ValueError at start-up, exit 1.
Like vLLM, names may use underscores (--max_model_len), values may follow
"=", `vllm serve --model M` means `vllm serve M`, and JSON flags take dotted
keys (--kv-transfer-config.kv_role kv_both). Unlike vLLM, abbreviations of
flags (argparse's allow_abbrev) are refused: the facts do not list every
flag, so a prefix cannot be known to be unique.

STANDIN_PARSE_ONLY=1 exits 0 once the command line and the KV transfer
config are checked, before serving or benchmarking.
"""

import json
import os
import random
import re
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOP_USAGE = "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ..."
USAGE = {
    "vllm serve": "usage: vllm serve [model_tag] [options]",
    "vllm bench serve": "usage: vllm bench serve [options]",
}


def die(prog, usage, msg):
    """argparse's error(): usage, then PROG: error: MSG, exit 2."""
    sys.stderr.write(f"{usage}\n{prog}: error: {msg}\n")
    sys.exit(2)


def facts_dir():
    d = os.environ.get("STANDIN_FACTS", "")
    if not d or not os.path.isdir(d):
        sys.stderr.write(
            "vllm stand-in: STANDIN_FACTS names no directory of upstream facts "
            f"({d!r}); the e2e tests write one (standin_flags_test.go)\n"
        )
        sys.exit(3)
    return d


def read_list(name):
    path = os.path.join(facts_dir(), name)
    try:
        with open(path, encoding="utf-8") as f:
            return [line.split() for line in f if line.strip()]
    except OSError as e:
        sys.stderr.write(f"vllm stand-in: {e}\n")
        sys.exit(3)


def read_flags(name):
    """FLAG KIND [ALIAS...] lines as {option string: (flag, kind)}."""
    table = {}
    for fields in read_list(name):
        flag, kind, aliases = fields[0], fields[1], fields[2:]
        for s in [flag, *aliases]:
            table[s] = (flag, kind)
        if kind == "optional":
            table["--no-" + flag[2:]] = (flag, "negated")
    return table


NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")


def looks_like_option(arg):
    return arg.startswith("-") and arg != "-" and not NEGATIVE.match(arg)


def normalize(arg):
    """FlexibleArgumentParser: underscores become dashes in a --name (up to
    its first '.' and its '=')."""
    if not arg.startswith("--"):
        return arg
    key, eq, value = arg.partition("=")
    head, dot, rest = key[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + rest + eq + value


def parse(prog, argv, flags, npositional):
    """Parses argv as argparse would with the given flags, returning
    ({flag: value}, [positionals], {flag: {dotted keys}}). Errors exit the
    way argparse's do."""
    usage = USAGE[prog]
    values, positionals, extras, dotted = {}, [], [], {}
    args = [normalize(a) for a in argv]
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            for rest in args[i:]:
                (positionals if len(positionals) < npositional else extras).append(rest)
            break
        if a in ("-h", "--help"):
            print(usage)
            sys.exit(0)
        if not looks_like_option(a):
            (positionals if len(positionals) < npositional else extras).append(a)
            continue
        name, eq, explicit = a.partition("=")
        base, dot, subkey = name.partition(".")
        if dot and base in flags and flags[base][1] == "value":
            # --json-flag.key[+] VALUE (FlexibleArgumentParser)
            if eq:
                v = explicit
            elif i < len(args):
                v, i = args[i], i + 1
            else:
                die(prog, usage, f"argument {name}: expected one argument")
            keys = subkey.removesuffix("+").split(".")
            if subkey.endswith("+"):
                v = json.dumps(v.split(","))
            try:
                v = json.loads(v)
            except ValueError:
                pass
            d = dotted.setdefault(base, {})
            for k in keys[:-1]:
                d = d.setdefault(k, {})
            d[keys[-1]] = v
            continue
        if name not in flags:
            extras.append(a)
            continue
        flag, kind = flags[name]
        if kind in ("store_true", "optional", "negated"):
            if eq:
                die(prog, usage, f"argument {name}: ignored explicit argument {explicit!r}")
            values[flag] = kind != "negated"
            continue
        if eq:
            v = explicit
        elif i < len(args) and not looks_like_option(args[i]):
            v, i = args[i], i + 1
        elif kind == "either":
            values[flag] = True
            continue
        else:
            die(prog, usage, f"argument {name}: expected one argument")
        values[flag] = v
    if extras:
        die("vllm", TOP_USAGE, "unrecognized arguments: " + " ".join(extras))
    return values, positionals, dotted


def pydantic_error(loc, msg, kind, value):
    """repr() of pydantic's ValidationError, which vLLM's parse_dataclass
    raises as the ArgumentTypeError's message."""
    return (
        f"1 validation error for KVTransferConfig\n{loc}\n  {msg} "
        f"[type={kind}, input_value={value!r}, input_type={type(value).__name__}]"
    )


def check_kv_transfer_config(prog, raw, dotted):
    """KVTransferConfig as vLLM builds it from the flag (pydantic, extra
    fields forbidden, kv_role a Literal), then the connector as vLLM's
    factory resolves it at start-up."""
    usage = USAGE[prog]
    arg = "argument --kv-transfer-config: "
    cfg = {}
    if raw is not None:
        try:
            cfg = json.loads(raw)
        except ValueError as e:
            die(prog, usage, arg + pydantic_error("", f"Invalid JSON: {e}", "json_invalid", raw))
        if not isinstance(cfg, dict):
            die(prog, usage, arg + pydantic_error("", "Input should be an object", "dataclass_type", cfg))
    cfg.update(dotted)
    fields = {f[0] for f in read_list("kv_fields")}
    roles = [r[0] for r in read_list("kv_roles")]
    for k, v in cfg.items():
        if k not in fields:
            die(prog, usage, arg + pydantic_error(k, "Extra inputs are not permitted", "extra_forbidden", v))
    role = cfg.get("kv_role")
    if role is not None and role not in roles:
        choices = ", ".join(repr(r) for r in roles[:-1]) + f" or {roles[-1]!r}"
        die(prog, usage, arg + pydantic_error("kv_role", f"Input should be {choices}", "literal_error", role))
    name = cfg.get("kv_connector")
    if name is not None and role is None:
        die(prog, usage, arg + pydantic_error(
            "", f"Value error, Please specify kv_role when kv_connector is set, supported roles are {tuple(roles)}",
            "value_error", cfg))
    if name is None:
        return
    module = cfg.get("kv_connector_module_path")
    if module is not None and not module:
        start_up_error("kv_connector_module_path cannot be an empty string.")
    if module:
        return  # vLLM imports NAME from the module; the stand-in takes it
    if name not in {c[0] for c in read_list("connectors")}:
        start_up_error(f"Unsupported connector type: {name}")


def start_up_error(msg):
    """A ValueError raised while the engine starts: Python's traceback, exit 1."""
    sys.stderr.write(
        "Traceback (most recent call last):\n"
        '  File "vllm/distributed/kv_transfer/kv_connector/factory.py", '
        "in _get_connector_class_with_compat\n"
        f"ValueError: {msg}\n"
    )
    sys.exit(1)


def serve(argv):
    prog = "vllm serve"
    # FlexibleArgumentParser moves `--model M` to the positional model_tag.
    for j, a in enumerate(argv):
        if a == "--model" and j + 1 < len(argv):
            argv = [argv[j + 1], *argv[:j], *argv[j + 2:]]
            break
        if a.startswith("--model="):
            argv = [a.removeprefix("--model="), *argv[:j], *argv[j + 1:]]
            break
    values, _, dotted = parse(prog, argv, read_flags("serve.flags"), 1)
    if "--kv-transfer-config" in values or "--kv-transfer-config" in dotted:
        check_kv_transfer_config(prog, values.get("--kv-transfer-config"), dotted.get("--kv-transfer-config", {}))
    if os.environ.get("STANDIN_PARSE_ONLY") == "1":
        sys.exit(0)
    port = str(values.get("--port", "8000"))
    argv = ["python3", os.path.join(HERE, "vllm_cache_standin.py"), "--port", port,
            "--gpu-blocks", os.environ.get("STANDIN_GPU_BLOCKS", "4096")]
    if "--kv-transfer-config" in values or "--kv-transfer-config" in dotted:
        argv.append("--tier")
    os.execvp("python3", [*argv, os.environ["KVSWEEP_CELL_DIR"]])


def bench_serve(argv):
    prog = "vllm bench serve"
    values, _, _ = parse(prog, argv, read_flags("bench_serve.flags"), 0)
    datasets = [d[0] for d in read_list("datasets")]
    ds = values.get("--dataset-name")
    if ds is not None and ds not in datasets:
        die(prog, USAGE[prog], f"argument --dataset-name: invalid choice: {ds!r} (choose from {', '.join(datasets)})")
    if os.environ.get("STANDIN_PARSE_ONLY") == "1":
        sys.exit(0)
    port = int(values.get("--port", 8000))
    # A scrape of the server before the prompts and one after: the case's
    # window has its figures whatever the scrape interval.
    wait_for_scrape(port, 1)
    ttfts = []
    for prompt in prompts(prog, values):
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                     data=json.dumps({"prompt": prompt, "max_tokens": 1}).encode(),
                                     headers={"Content-Type": "application/json"})
        began = time.monotonic()
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read()
        ttfts.append((time.monotonic() - began) * 1000)
    wait_for_scrape(port, 1)
    if values.get("--save-result"):
        out = os.path.join(values.get("--result-dir") or ".",
                           values.get("--result-filename") or "vllm-infqps-standin.json")
        # The real file, with the time to first token this run measured.
        with open(os.environ["STANDIN_BENCH"], encoding="utf-8") as f:
            doc = json.load(f)
        ttfts.sort()
        doc.update({"mean_ttft_ms": sum(ttfts) / len(ttfts), "median_ttft_ms": ttfts[len(ttfts) // 2],
                    "p99_ttft_ms": ttfts[min(len(ttfts) - 1, int(len(ttfts) * 0.99))]})
        with open(out, "w", encoding="utf-8") as f:
            json.dump(doc, f)


def prompts(prog, values):
    """The prompts of bench serve's dataset, as words (a word a token),
    seeded by --seed so that two runs send the same prompts: random makes
    --num-prompts prompts of --random-input-len words behind one shared
    --random-prefix-len prefix; prefix_repetition makes
    num_prefixes x floor(num_prompts / num_prefixes) prompts, each of its
    prefix's --prefix-repetition-prefix-len words and a fresh suffix, and
    shuffles them unless --disable-shuffle."""
    rng = random.Random(int(values.get("--seed", 0)))
    n = int(values.get("--num-prompts", 1000))

    def words(k):
        return [f"w{rng.randrange(1 << 30)}" for _ in range(k)]

    if values.get("--dataset-name", "random") != "prefix_repetition":
        prefix = words(int(values.get("--random-prefix-len", 0)))
        return [" ".join(prefix + words(int(values.get("--random-input-len", 1024)))) for _ in range(n)]
    k = int(values.get("--prefix-repetition-num-prefixes", 10))
    if n < k:
        start_up_error(f"num_requests ({n}) must be greater than or equal to num_prefixes ({k})")
    suffix = int(values.get("--prefix-repetition-suffix-len", 256))
    out = []
    for _ in range(k):
        prefix = words(int(values.get("--prefix-repetition-prefix-len", 256)))
        out += [" ".join(prefix + words(suffix)) for _ in range(n // k)]
    if not values.get("--disable-shuffle"):
        rng.shuffle(out)
    return out


def wait_for_scrape(port, more):
    """Waits until kvsweep's scraper has read the server MORE more times
    (at most 2 minutes)."""
    telemetry = os.path.join(os.environ["KVSWEEP_CELL_DIR"], "telemetry.jsonl")
    mark = f'127.0.0.1:{port}/metrics'

    def count():
        try:
            with open(telemetry, encoding="utf-8") as f:
                return sum(mark in line and '"error"' not in line for line in f)
        except OSError:
            return 0

    want = count() + more
    for _ in range(600):
        if count() >= want:
            return
        time.sleep(0.2)
    sys.stderr.write("vllm stand-in: the scraper never read the server\n")
    sys.exit(3)


def main(argv):
    if argv[:1] == ["serve"]:
        serve(argv[1:])
    elif argv[:2] == ["bench", "serve"]:
        bench_serve(argv[2:])
    else:
        die("vllm", TOP_USAGE, f"the stand-in has no command {' '.join(argv[:2])!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
