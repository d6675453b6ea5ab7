# podsched: `make run` and `make test` work from a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

comma := ,
.PHONY: help venv protos lint test test-unit kafka-install jaeger-install oracle-install browser-install run up down status simulate bench-core bench bench-ab profile bench-upstream bench-restart soak certs clean test-upstream
PROTO_FILES := $(shell find protos -name '*.proto')
PROTO_OUT := libs/podsched_proto
# protos/ is the single source of truth; the generated modules live only in the ignored $(PROTO_OUT).
GENERATE_PROTOS = rm -rf $(PROTO_OUT) && \
	$(PY) -m grpc_tools.protoc -I protos --python_out=libs --grpc_python_out=libs --pyi_out=libs $(PROTO_FILES) && \
	find $(PROTO_OUT) -type d -exec touch {}/__init__.py \; && touch $(PROTO_OUT)/.generated

help:
	@echo "make run        - set up and start the whole system (Kafka, Jaeger, 4 services, the dashboard on http://127.0.0.1:8080), run the example, print its trace, serve until Ctrl-C"
	@echo "make up / down  - start / stop the whole system in the background (state kept in .cache/devstack; KAFKA_NODES=3: replicated Kafka)"
	@echo "make jaeger-install - build Jaeger v2 from the Go module proxy into ~/.cache/podsched (needs Go 1.24+; ~10 min, once)"
	@echo "make simulate   - the example in one process on a simulated clock (podsched simulate)"
	@echo "make browser-install - Debian's chromium for the dashboard's browser tests (apt-get; skipped if $(CHROMIUM) exists)"
	@echo "make test       - lint, then the whole test suite against a real Kafka broker, a real Jaeger and the real upstream kube-scheduler"
	@echo "make test-upstream N=1000 - podsched simulate against the real kube-scheduler v1.37.2 on N random clusters (tests/oracle)"
	@echo "make oracle-install - build the upstream kube-scheduler oracle from the Go module proxy into ~/.cache/podsched (~7 min, once)"
	@echo "make bench-core - scheduling-core micro benchmarks (plain vs fast path), JSON lines"
	@echo "make bench      - upstream scheduler_perf workloads end to end through the services and Kafka (WORKLOAD=name for one)"
	@echo "make bench-upstream - podsched against upstream's scheduler_perf v1.37.2, same run, alternating (WORKLOADS=... ROUNDS=n)"
	@echo "make bench-ab   - two commits compared with interleaved bench runs (BASE=rev, HEAD=rev or the working tree)"
	@echo "make profile    - py-spy on every service during one bench workload (WORKLOAD=name): the top functions per service (docs/performance.md)"
	@echo "make bench-restart - each service's restart time against history length, compacted log vs whole history (HISTORY=\"0 20000\" MODES=\"history compacted\"), JSON lines + docs/bench/restart.png"
	@echo "make soak DURATION=30m - churn through the API while services and Kafka nodes are killed -9 at random; audit, lost writes and RSS over time (docs/soak.md)"
	@echo "make protos     - generate Python code from protos/ into $(PROTO_OUT) (never committed)"
	@echo "make certs      - development TLS certificates, tokens, policy and kubeconfig into $(CERTS_DIR) (docker compose uses them)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	$(GENERATE_PROTOS)
	# Install again so the editable install also knows the generated package.
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

venv: $(STAMP)

protos: $(PROTO_OUT)/.generated

$(PROTO_OUT)/.generated: $(PROTO_FILES) | $(STAMP)
	$(GENERATE_PROTOS)

lint: $(STAMP)
	$(VENV)/bin/ruff check $(wildcard libs services tests benchmarks)
	$(VENV)/bin/ruff format --check $(wildcard libs services tests benchmarks)
	$(VENV)/bin/mypy

kafka-install: $(STAMP)
	$(PY) -m podsched_devstack.kafka install

jaeger-install: $(STAMP)
	$(PY) -m podsched_devstack.jaeger install

# The upstream kube-scheduler oracle (tests/oracle/upstream) built into ~/.cache/podsched/upstream (needs Go 1.26; ~7 min once).
oracle-install: $(STAMP)
	$(PY) -m podsched_devstack.upstream install

# The dashboard's tests drive a real browser: Debian's chromium (playwright is pointed at it; no browser
# download). Skipped when it is there; otherwise apt-get (as root, else through sudo).
CHROMIUM ?= /usr/bin/chromium
browser-install:
	@if [ -x $(CHROMIUM) ]; then echo "chromium: $(CHROMIUM)"; else \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update && $$SUDO apt-get install -y chromium; fi

test: lint protos kafka-install jaeger-install oracle-install browser-install
	$(PY) -m pytest -q

test-unit: $(STAMP) protos
	$(PY) -m pytest -q tests/unit

run: protos kafka-install jaeger-install
	$(PY) -m podsched_devstack run $(if $(KAFKA_NODES),--kafka-nodes $(KAFKA_NODES))

up: protos kafka-install jaeger-install
	$(PY) -m podsched_devstack up $(if $(KAFKA_NODES),--kafka-nodes $(KAFKA_NODES))

down: $(STAMP)
	$(PY) -m podsched_devstack down

status: $(STAMP)
	$(PY) -m podsched_devstack status

simulate: $(STAMP)
	$(VENV)/bin/podsched simulate -f examples/high-mid-low/cluster.yaml -f examples/high-mid-low/workload.yaml -f examples/high-mid-low/preemptor.yaml -o table

# podsched simulate against the real upstream kube-scheduler on N random clusters (tests/oracle/README.md);
# SEED=s repeats a run. Builds the upstream oracle first if needed (~7 min once).
N ?= 1000
test-upstream: oracle-install
	$(PY) -m tests.oracle.differential --count $(N) $(if $(SEED),--seed $(SEED))

bench-core: $(STAMP)
	$(PY) -m benchmarks.core $(BENCH_ARGS)

# WORKLOAD=SchedulingBasic|PreemptionBasic500|PreemptionBasic1000|PreemptionAsync|Unschedulable; BENCH_ARGS e.g. --scale 0.1
bench: protos kafka-install
	$(PY) -m benchmarks.scheduler_perf $(if $(WORKLOAD),--workload $(WORKLOAD)) $(BENCH_ARGS)

# py-spy on each service during one workload's measured phase: WORKLOAD=SchedulingBasic [BENCH_ARGS="--scale 0.5"];
# raw stacks and the summary in .cache/profile
profile: protos kafka-install
	$(PY) -m benchmarks.profile_services $(if $(WORKLOAD),--workload $(WORKLOAD)) $(BENCH_ARGS)

# Two commits, runs interleaved: BASE=rev [HEAD=rev, default the working tree] [WORKLOAD=...] [ROUNDS=2]
bench-restart: protos kafka-install
	$(PY) -m benchmarks.restart $(foreach h,$(HISTORY),--history $(h)) $(foreach m,$(MODES),--mode $(m)) $(BENCH_ARGS)

# DURATION=30m (seconds, or 90s, 30m, 1h) [SEED=n] [SOAK_OUT=docs/soak]: churn with kill -9 of services and
# Kafka nodes at random times, then the audit and the RSS of every process (docs/soak.md)
DURATION ?= 10m
SOAK_OUT ?= .cache/soak/latest
soak: protos kafka-install
	$(PY) -m benchmarks.soak --duration $(DURATION) $(if $(SEED),--seed $(SEED)) --out-dir $(SOAK_OUT) $(BENCH_ARGS)

bench-ab: protos kafka-install
	$(PY) -m benchmarks.ab --base $(BASE) $(if $(HEAD),--head $(HEAD)) $(if $(WORKLOAD),--workload $(WORKLOAD)) \
		$(if $(ROUNDS),--rounds $(ROUNDS)) $(if $(BENCH_ARGS),-- $(BENCH_ARGS))

# podsched against upstream's own scheduler_perf (built from the Go module proxy into ~/.cache/podsched/schedperf,
# ~7 min once), alternating rounds; WORKLOADS=SchedulingBasic,Unschedulable (parts of names) ROUNDS=2
# [SKIP_VARIANTS=PreemptionAsync/5000Nodes: upstream variants not to run, by whole name]
bench-upstream: protos kafka-install
	$(PY) -m benchmarks.bench_upstream $(foreach w,$(subst $(comma), ,$(WORKLOADS)),--workload $(w)) \
		$(foreach v,$(subst $(comma), ,$(SKIP_VARIANTS)),--skip-variant $(v)) $(if $(ROUNDS),--rounds $(ROUNDS)) --out-dir docs/bench

# Development credentials for docker-compose.yml (TLS, mutual TLS, tokens, roles); .cache/ is ignored by git.
CERTS_DIR := .cache/certs
certs: $(STAMP)
	$(PY) -m podsched_devstack certs $(CERTS_DIR)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
