# reactorbench: `make help` lists every target.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# where `make bench` and `make bench-<scenario>` write (one folder per scenario sweep)
BENCH_DIR ?= results/bench/latest
# the reference full sweep that README's Results block is generated from (make results-readme)
README_RUN ?= results/reference/vm-2core-2026-12-02n
NAME ?=
WORKERS ?= 2
BUDGET ?= local
# sweeps resume by default: a job whose folder holds all its ok rows for the same config and git sha is
# skipped; FRESH=1 measures everything again (earlier files are renamed *.superseded-<time>.*, never deleted)
FRESH ?=
# TRIALS=0,1,2: every sweep runs three times over, its backends interleaved (a, b, c, a, b, c, ...), and the
# report pools the trials: on a machine whose speed drifts, each backend then samples the same stretch of time
TRIALS ?= 0
# failures fail: a sweep line that fails (a job's `error` or `timeout` row, a refused configuration) is recorded in
# FAILED and its target goes on with the remaining sweeps and the report; $(FINISH), the target's last line,
# then exits 1 naming every failed line. A target run by another (`make bench`) gets NESTED=1: only the outer
# target starts a fresh FAILED and finishes with its verdict
FAILED ?= $(BENCH_DIR)/failed-sweeps.txt
NESTED ?=
START = @$(if $(NESTED),true,mkdir -p $(dir $(FAILED)) && rm -f $(FAILED))
TRY = @try() { echo "$$*"; "$$@" || echo "$@: exit $$? from: $$*" >> $(FAILED); }; try
FINISH = @$(if $(NESTED),true,test ! -s $(FAILED) || { echo "failed sweeps (also in $(FAILED)):"; cat $(FAILED); exit 1; })
SUBMAKE = $(MAKE) --no-print-directory NESTED=1 FAILED=$(FAILED)
# a bench-* target run on its own ends with the report of what it wrote (inside `make bench`, bench's one report
# covers it): $(call OWN_REPORT,<folder>)
OWN_REPORT = $(if $(NESTED),@true,@dirs=""; for d in $(1); do test -d $$d && dirs="$$dirs $$d"; done; test -z "$$dirs" || $(PY) -m harness.report $$dirs)
SWEEP := $(PY) -m harness -m budget=$(BUDGET) resume=$(if $(FRESH),false,true) trial=$(TRIALS)
HARNESS := $(SWEEP) workers=$(WORKERS)
SCENARIOS := gym atari dqn marl actors object_size overhead
# every backend that can run the Gym / Atari workloads: Ray in the paper's layout (ray, ray_compiled: one
# actor per role) and at its best on few cores (ray_packed, ray_compiled_packed: one actor per worker), and
# capacity: the machine's measured ceiling (`workers` uncoordinated serial copies); capacity_lockstep: the
# ceiling of synchronized rounds (the same copies meeting once per round; docs/report.md); rllib: RLlib's own
# sampler, a labelled reference beside the verdicts (not the same work: docs/ray.md, "RLlib").
# The reactor executors against serial, Ray at its best and the ceilings are read from paired jobs (bench-paired); these
# standalone sweeps measure every Ray layout, RLlib and the vector envs, with serial, the reactor and the ceilings as their same-kind
# reference (a ratio of a paired block to a standalone job would mix the two readings: docs/harness.md, "Paired
# blocks")
ENV_BACKENDS := serial,reactor,ray,ray_compiled,ray_packed,ray_compiled_packed,vector,capacity,capacity_lockstep,rllib
# Atari adds ale-py's own C++-threaded vector env (threads = workers, all envs per step, pinned where they fit) and
# EnvPool where it is installed (make install-envpool; a labelled reference: not the same frames, backends/envpool.py)
ENVPOOL_OK = $(shell $(PY) -c 'import envpool' >/dev/null 2>&1 && echo yes)
ATARI_BACKENDS = $(ENV_BACKENDS),ale_vector$(if $(ENVPOOL_OK),$(comma)envpool)
comma := ,
# PufferLib's vectorizer (backend=puffer) needs num_envs divisible by workers: its own sweep per env workload, on
# PUFFER_ENVS envs, with serial, the reactor, the vector envs and the synchronized ceiling on the same envs as its
# same-kind reference (standalone jobs: its waiting busy-waits, so paired jobs refuse it)
PUFFER_ENVS ?= 16
PUFFER_BACKENDS := serial,reactor,puffer,vector,capacity_lockstep
ROLE_BACKENDS := serial,reactor,ray,ray_compiled,ray_packed,ray_compiled_packed,capacity,capacity_lockstep
# paired jobs (`python -m harness compare`): every backend resident, alternating blocks of the same rounds; the
# first two give the main ratio (reactor / serial), whose precision (PAIRED_PRECISION, 0.05: +-5%) or
# PAIRED_SECONDS of cycles end each job. Ray at its best (actors packed to the worker count, and as a Compiled
# Graph) is resident too, parked between its blocks: the answer's "reactor / best alternative" comes from these jobs
PAIRED_BACKENDS ?= serial,reactor,reactor_threads,reactor_inline,ray_packed,ray_compiled_packed,capacity_lockstep,capacity
PAIRED_PRECISION ?= 0.05
PAIRED_SECONDS ?= 240
PAIRED := $(PY) -m harness compare -m budget=$(BUDGET) workers=$(WORKERS) backends=[$(PAIRED_BACKENDS)] compare.precision=$(PAIRED_PRECISION) compare.max_seconds=$(PAIRED_SECONDS)
# the paper's layout (`ray`: one actor per role) joins the jobs whose rounds fit: where its round takes at most ten
# times serial's (its block then lasts at most ~1 s at compare.block_s=0.1, as long as ray_packed's on gym, the longest
# block these jobs already hold). Measured at workers=2 (docs/ray.md, "In paired jobs"): atari, dqn and marl's
# simple_spread_v3 fit; gym's 15 actors and marl's synthetic env's 10 actors on 2 cores do not (their round takes
# 19-30x serial's on a quiet host, a block longer than the rest of the cycle): they leave it out
PAIRED_PAPER_RAY ?= ray
PAIRED_WITH_PAPER_RAY := $(PY) -m harness compare -m budget=$(BUDGET) workers=$(WORKERS) backends=[$(PAIRED_BACKENDS)$(if $(PAIRED_PAPER_RAY),$(comma)$(PAIRED_PAPER_RAY))] compare.precision=$(PAIRED_PRECISION) compare.max_seconds=$(PAIRED_SECONDS)
# the paper's configurations (scripts/paper_bench.py): the paper's pair (reactor, Ray one actor per role),
# the reference, and Ray at its best (packed layouts; names as issue 11's backend configs define them)
PAPER_RAY_BEST ?= ray_packed,ray_compiled_packed
PAPER_BACKENDS ?= serial,reactor,ray,$(PAPER_RAY_BEST)
PAPER_WORKERS ?= $(shell nproc)
PAPER_DIR ?= results/bench/paper
# a subset for a small machine: the paper's sizes and settings, rounds cut to serial jobs of about this many
# seconds (empty: the paper's rounds); the report lists the shortened rounds as a difference
PAPER_JOB_SECONDS ?=

.PHONY: compare-ray proxy selftest device-kit device-kit-ft device-local device-local-ft install-envpool help python-ft install-ft test-ft bench-ft install test test-slow load soak bench bench-scaling bench-paired bench-paper bench-paper-local report results-readme archive clean $(addprefix bench-,$(SCENARIOS))

help: ## List every target
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 22

PUFFER_VERSION ?= 3.0.23
$(STAMP): pyproject.toml setup.py $(wildcard reactor_backend/*.pyx reactor_backend/*.pxi reactor_backend/*.pxd scenarios/*.pyx)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first and pinned: the CPU wheel 2.13.0; an unpinned torch would pull a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0 "Cython>=3.0" "numpy>=1.26" "setuptools>=68" wheel
	# rllib: RLlib's dependencies (bench-gym and bench-atari run the rllib reference row)
	$(PY) -m pip install -q --no-build-isolation -e ".[dev,rllib]"
	# backend=puffer: pufferlib-core pins torch==2.9.0, while its vectorizer needs only numpy, gymnasium and psutil
	# (installed above): --no-deps keeps torch at the pin (tests/harness/test_puffer.py checks it)
	$(PY) -m pip install -q --no-deps pufferlib-core==$(PUFFER_VERSION)
	@touch $(STAMP)

install: $(STAMP) ## Create .venv if absent and install everything (quick when nothing changed)

# the suite spends half its time waiting on the processes it starts (jobs, Ray's start-up), so two pytest-xdist
# workers keep two cores busy; --dist loadgroup keeps the modules that start Ray in the test process together
TEST_WORKERS ?= 2
test: install ## Run the fast test suite (slow checks excluded) on TEST_WORKERS pytest workers
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

test-slow: install ## Run only the slow tests
	$(PY) -m pytest -q -m slow

# the load set: 8 and 16 workers on this machine's cores (reactor, Ray), 256 envs, payloads against /dev/shm,
# a short soak (LOAD_SOAK_MINUTES, default 2); `make soak` is the long one (SOAK_MINUTES, default 30)
SOAK_MINUTES ?= 30
LOAD_DIR ?= results/load/$(shell date +%Y-%m-%d_%H-%M-%S)
load: install ## Load held: many workers, 256 envs, /dev/shm-sized payloads, a short soak (slow, ~15 min)
	LOAD_RESULTS_DIR=$(LOAD_DIR) $(PY) -m pytest -q -m slow tests/load tests/harness/test_cleanup.py
	$(PY) -m harness.report $(LOAD_DIR)

soak: install ## Gym on the reactor for SOAK_MINUTES (default 30): RSS and /dev/shm over time, no growth, no leak
	$(PY) -m harness.soak --minutes $(SOAK_MINUTES)

bench: install ## The local sweep of every scenario, the paired jobs (bench-paired), then the report (resumes; FRESH=1: from scratch)
	$(START)
	$(SUBMAKE) $(addprefix bench-,$(SCENARIOS)) BENCH_DIR=$(BENCH_DIR)
	$(SUBMAKE) bench-paired-jobs BENCH_DIR=$(BENCH_DIR)
	$(SUBMAKE) bench-paper-local BENCH_DIR=$(BENCH_DIR)
	$(SUBMAKE) report BENCH_DIR=$(BENCH_DIR)
	@$(PY) -m harness selftest --latest-line
	$(FINISH)

# issue 46's everyday proxy for many cores (docs/report.md, "The scaling prediction"): per workload (16 envs, agents or
# rollouts) a paired job at workers=2 (the reactor with a core per process beside serial and the synchronized ceiling:
# the run's cache baseline), one at workers=2 on the bank that gives each process as many members as at PROXY_WORKERS
# (the like-for-like warm reference), and one at PROXY_WORKERS with a process per worker (each process's CPU per
# round), each PROXY_SECONDS of cycles; PROXY_BANK sets the bank (16; 64: four per process at 16); then `--predict` on the run: the share of the ceiling a core per process would give, against
# PROXY_MACHINE's ceiling where it names a reference run of the target machine (else the ideal: PROXY_WORKERS copies)
PROXY_WORKLOADS ?= gym atari dqn marl
PROXY_WORKERS ?= 16
# (a list runs each: PROXY_WORKERS="4 8 16", the counts the 16-core reference measured, about 2.5x as long)
PROXY_SECONDS ?= 20
# the longest wait, before the first job, for the load average to fall below the cores (the jobs with a core per
# process give the run's hand-offs only when they start on such a host: docs/report.md)
PROXY_QUIET_S ?= 240
PROXY_DIR ?= $(BENCH_DIR)/proxy
PROXY_MACHINE ?=
# the bank: envs (gym, atari), agents (marl, synthetic) or rollouts (dqn); proxy_bank_<workload> sets a width $(1)
PROXY_BANK ?= 16
proxy_bank_gym = scenario.num_envs=$(1)
proxy_bank_atari = scenario.num_envs=$(1)
proxy_bank_marl = scenario.env=synthetic scenario.num_agents=$(1)
proxy_bank_dqn = scenario.num_rollouts=$(1)
PROXY_ARGS_gym = $(call proxy_bank_gym,$(PROXY_BANK))
PROXY_ARGS_atari = $(call proxy_bank_atari,$(PROXY_BANK))
PROXY_ARGS_marl = $(call proxy_bank_marl,$(PROXY_BANK))
PROXY_ARGS_dqn = $(call proxy_bank_dqn,$(PROXY_BANK))
# the like-for-like warm reference (docs/report.md): serial and the reactor at workers=2 on the bank that gives each of
# the two processes as many members as one process steps at a worker count $(1) (16 on 16: a bank of 2, one member
# each); one job per distinct bank over PROXY_WORKERS, none where it is PROXY_BANK (the first job's)
proxy_like_bank = $(shell m=$$(( $(PROXY_BANK) / $(1) )); echo $$(( 2 * (m > 0 ? m : 1) )))
PROXY_LIKE_BANKS = $(filter-out $(PROXY_BANK),$(sort $(foreach w,$(PROXY_WORKERS),$(call proxy_like_bank,$(w)))))
# PROXY_FT=1: the jobs of PROXY_FT_WORKLOADS (those the free-threaded venv can run: gym; atari with ale-py there;
# dqn and marl with torch there) also hold the threads executor on the free-threaded interpreter (.venv-ft: make
# install-ft) beside serial there (and at workers=2 its ceiling), so --predict reads the paper's own setup too
PROXY_FT ?= 0
PROXY_FT_WORKLOADS ?= gym $(if $(FT_ALE_OK),atari) $(if $(FT_TORCH_OK),dqn marl)
COMMA := ,
proxy_ft = $(and $(filter 1,$(PROXY_FT)),$(filter $(1),$(PROXY_FT_WORKLOADS)))
PROXY_JOB = $(if $(filter 1,$(PROXY_FT)),env REACTORBENCH_FT_PYTHON=$(CURDIR)/$(FT_PY) )$(PY) -m harness compare budget=local compare.max_seconds=$(PROXY_SECONDS) quiet=true
define PROXY_W2
$(TRY) $(PROXY_JOB) scenario=$(1) "backends=[serial,reactor,capacity_lockstep$(if $(call proxy_ft,$(1)),$(COMMA)serial@ft$(COMMA)reactor_threads@ft$(COMMA)capacity_lockstep@ft)]" workers=2 $(PROXY_ARGS_$(1)) hydra.run.dir=$(PROXY_DIR)/$(1)-w2

endef
define PROXY_LIKE
$(TRY) $(PROXY_JOB) scenario=$(1) "backends=[serial,reactor$(if $(call proxy_ft,$(1)),$(COMMA)serial@ft$(COMMA)reactor_threads@ft)]" workers=2 $(call proxy_bank_$(1),$(2)) hydra.run.dir=$(PROXY_DIR)/$(1)-w2-bank$(2)

endef
define PROXY_WK
$(TRY) $(PROXY_JOB) scenario=$(1) "backends=[serial,reactor_per_worker$(if $(call proxy_ft,$(1)),$(COMMA)serial@ft$(COMMA)reactor_threads@ft)]" workers=$(2) $(PROXY_ARGS_$(1)) hydra.run.dir=$(PROXY_DIR)/$(1)-w$(2)

endef
# the jobs with a core per process first, while the host is quiet: their hand-offs are the run's (docs/report.md)
proxy: install ## Many cores seen from here: paired jobs at workers=2 and PROXY_WORKERS (16) per workload, then the scaling prediction (--predict); PROXY_FT=1: threads on free-threaded Python too
	$(START)
	@$(PY) -m harness.hostwatch --wait-quiet $(PROXY_QUIET_S)
	$(foreach s,$(PROXY_WORKLOADS),$(call PROXY_W2,$(s)))
	$(foreach b,$(PROXY_LIKE_BANKS),$(foreach s,$(PROXY_WORKLOADS),$(call PROXY_LIKE,$(s),$(b))))
	$(foreach w,$(PROXY_WORKERS),$(foreach s,$(PROXY_WORKLOADS),$(call PROXY_WK,$(s),$(w))))
	$(TRY) $(PY) -m harness.report --predict $(PROXY_DIR)$(if $(PROXY_MACHINE), --machine $(PROXY_MACHINE))
	$(FINISH)

# ten minutes to an answer (issue 48): one paired job per RL workload (gym, atari, dqn, marl synthetic) holding
# serial, the reactor, Ray at its best on few cores (ray_packed, ray_compiled_packed: parked between their blocks)
# and the synchronized ceiling, COMPARE_RAY_SECONDS of cycles each after start-up, then the report with its answer
# printed (scripts/compare_ray.py); exits 1 naming each failed workload, and checks that no process or /dev/shm
# entry of its jobs is left. COMPARE_RAY_DIR: where (default results/compare-ray/<time>)
COMPARE_RAY_BACKENDS ?= serial,reactor,ray_packed,ray_compiled_packed,capacity_lockstep
COMPARE_RAY_SECONDS ?= gym=120,atari=60,dqn=90,marl=60
COMPARE_RAY_WORKLOADS ?= gym,atari,dqn,marl
COMPARE_RAY_DIR ?=
compare-ray: install ## The reactor against Ray here in ~10 min: paired jobs on gym, atari, dqn, marl (serial, reactor, ray_packed, ray_compiled_packed, capacity_lockstep), then the answer table
	$(PY) scripts/compare_ray.py --workers $(WORKERS) --backends $(COMPARE_RAY_BACKENDS) --seconds $(COMPARE_RAY_SECONDS) --workloads $(COMPARE_RAY_WORKLOADS)$(if $(COMPARE_RAY_DIR), --out $(COMPARE_RAY_DIR))

# what this machine can resolve (docs/harness.md, "Known answers"): A/A paired jobs and injected effects, run as
# bench-paired runs its jobs (its stop rule compare.precision=SELFTEST_PRECISION, by default PAIRED_PRECISION; the
# ceilings of PAIRED_BACKENDS as residents; respawning and the margin as shipped), each capped at SELFTEST_SECONDS
# of cycles (PAIRED_SECONDS, as shipped: a job stopped by a shorter cap did not run as bench-paired runs it, and
# then no margin is stored; of the 40 jobs in results/reference/vm-2core-2026-12-05-end-of-set/, 7 ran past 90 s of
# cycles and 17 past 60 s, so a shorter cap would seldom store one. 10 jobs took 9 minutes on the same VM at df5ddcb8 and 40 took
# 61: that folder's README). It stores the measured margin for this
# machine and workload (results/machine/: SELFTEST_SCENARIO at WORKERS) when its jobs ran as shipped and there were
# at least 10; paired jobs of that workload run as shipped use it from then (other workloads, and jobs that stop or
# size their blocks otherwise, keep the 1% default).
# The issue's long targets (docs/harness.md, "Known answers"): make selftest SELFTEST_JOBS=40 SELFTEST_SECONDS=240
# (A/A exactly as bench-paired), then make selftest SELFTEST_JOBS=30 SELFTEST_SECONDS=120 SELFTEST_PRECISION=1e-9
# SELFTEST_EFFECTS=0.02,0.05,0.08 (detection in 120-s jobs: time stops them; python -m harness selftest --reanalyze
# <its folder> --at-seconds 60 reads the same jobs as 60-s jobs)
SELFTEST_JOBS ?= 10
SELFTEST_SCENARIO ?= gym
SELFTEST_SECONDS ?= $(PAIRED_SECONDS)
SELFTEST_EFFECTS ?= 0.02,0.05
SELFTEST_PRECISION ?= $(PAIRED_PRECISION)
SELFTEST_RESIDENTS ?= $(subst $(space),$(comma),$(filter capacity%,$(subst $(comma), ,$(PAIRED_BACKENDS))))
SELFTEST_STANDALONE ?= false
space := $(subst ,, )
selftest: install ## A/A jobs and injected effects run as bench-paired runs them (SELFTEST_JOBS jobs of at most SELFTEST_SECONDS: about 20 min at the defaults on the 2-vCPU VM): the margin, the false-verdict rate, what is detected
	$(PY) -m harness selftest scenario=$(SELFTEST_SCENARIO) selftest.jobs=$(SELFTEST_JOBS) selftest.seconds=$(SELFTEST_SECONDS) "selftest.effects=[$(SELFTEST_EFFECTS)]" "selftest.residents=[$(SELFTEST_RESIDENTS)]" selftest.standalone=$(SELFTEST_STANDALONE) workers=$(WORKERS) budget=$(BUDGET) compare.precision=$(SELFTEST_PRECISION)

bench-gym: install ## Gym (CartPole) standalone: serial, the reactor, every Ray layout, the vector env, the ceilings and RLlib's sampler (a reference); the reactor executors: bench-paired
	$(START)
	$(TRY) $(HARNESS) scenario=gym backend=$(ENV_BACKENDS) hydra.sweep.dir=$(BENCH_DIR)/gym
	$(TRY) $(HARNESS) scenario=gym scenario.num_envs=$(PUFFER_ENVS) backend=$(PUFFER_BACKENDS) hydra.sweep.dir=$(BENCH_DIR)/gym_puffer
	$(call OWN_REPORT,$(BENCH_DIR)/gym $(BENCH_DIR)/gym_puffer)
	$(FINISH)

bench-atari: install ## Atari (Pong) standalone: as bench-gym, plus ale-py's AtariVectorEnv
	$(START)
	$(TRY) $(HARNESS) scenario=atari backend=$(ATARI_BACKENDS) hydra.sweep.dir=$(BENCH_DIR)/atari
	$(TRY) $(HARNESS) scenario=atari scenario.num_envs=$(PUFFER_ENVS) backend=$(PUFFER_BACKENDS),ale_vector hydra.sweep.dir=$(BENCH_DIR)/atari_puffer
	$(call OWN_REPORT,$(BENCH_DIR)/atari $(BENCH_DIR)/atari_puffer)
	$(FINISH)

bench-dqn: install ## Synchronized parallel DQN standalone: serial, the reactor, every Ray layout and the ceilings
	$(START)
	$(TRY) $(HARNESS) scenario=dqn backend=$(ROLE_BACKENDS) hydra.sweep.dir=$(BENCH_DIR)/dqn
	$(call OWN_REPORT,$(BENCH_DIR)/dqn)
	$(FINISH)

bench-marl: install ## Multi-agent inference (synthetic and simple_spread) standalone: serial, the reactor, every Ray layout and the ceilings
	$(START)
	$(TRY) $(HARNESS) scenario=marl scenario.env=synthetic,simple_spread_v3 backend=$(ROLE_BACKENDS) hydra.sweep.dir=$(BENCH_DIR)/marl
	$(call OWN_REPORT,$(BENCH_DIR)/marl)
	$(FINISH)

bench-actors: install ## Microbenchmark: round overhead against number of actors (2..16), and 2 actors with 100 KB / 10 MB
	$(START)
	$(TRY) $(HARNESS) scenario=actors scenario.num_clients=2,4,8,16 backend=reactor,reactor_threads,ray,ray_compiled hydra.sweep.dir=$(BENCH_DIR)/actors/clients
	$(TRY) $(HARNESS) scenario=actors scenario.num_clients=2 scenario.payload_bytes=100000 backend=reactor,ray,ray_compiled hydra.sweep.dir=$(BENCH_DIR)/actors/payload_100k
	$(TRY) $(HARNESS) scenario=actors scenario.num_clients=2 scenario.payload_bytes=10000000 budget.rounds=200 backend=reactor,ray,ray_compiled hydra.sweep.dir=$(BENCH_DIR)/actors/payload_10m
	$(call OWN_REPORT,$(BENCH_DIR)/actors)
	$(FINISH)

bench-object_size: install ## Microbenchmark: round overhead against payload (1 KB .. 100 MB, 16 clients)
	$(START)
	$(TRY) $(HARNESS) scenario=object_size scenario.payload_bytes=1000,100000,10000000,100000000 backend=reactor,ray,ray_compiled hydra.sweep.dir=$(BENCH_DIR)/object_size
	$(call OWN_REPORT,$(BENCH_DIR)/object_size)
	$(FINISH)

bench-overhead: install ## The reactor runtime's own overhead (chain and fan-out/fan-in, inline and threads)
	$(START)
	$(TRY) $(HARNESS) scenario=overhead scenario.shape=chain,fan backend=reactor_inline,reactor_threads hydra.sweep.dir=$(BENCH_DIR)/overhead
	$(call OWN_REPORT,$(BENCH_DIR)/overhead)
	$(FINISH)

# the scaling curve: workers above this machine's cores must degrade gracefully (issue 12), drawn by the
# report's throughput-against-workers figure with the ceiling line
SCALING_WORKERS ?= 1,2,4,8,16
# reactor: processes capped at the usable cores (the default); reactor_per_worker: one process per worker
SCALING_BACKENDS ?= serial,reactor,reactor_per_worker,ray_packed
bench-scaling: install ## Gym and Atari at SCALING_WORKERS (1..16) workers on serial, reactor (capped at the cores and one process per worker) and packed Ray, then the report
	$(START)
	$(TRY) $(SWEEP) scenario=gym backend=$(SCALING_BACKENDS) workers=$(SCALING_WORKERS) hydra.sweep.dir=$(BENCH_DIR)/scaling/gym
	$(TRY) $(SWEEP) scenario=atari backend=$(SCALING_BACKENDS) workers=$(SCALING_WORKERS) hydra.sweep.dir=$(BENCH_DIR)/scaling/atari
	$(SUBMAKE) report BENCH_DIR=$(BENCH_DIR)/scaling
	$(FINISH)

# issue 12's targets (the reactor against serial, one process of the same program and the synchronized ceiling)
# read from paired jobs: every backend resident in one job, alternating blocks, ratios within cycles and the host
# watched (docs/harness.md, "Paired blocks"); then the actors round trip and the report. A paired job is never
# resumed: each is one whole reading
bench-paired: install ## Paired jobs: serial, the reactor executors, Ray (packed, compiled packed) and both ceilings alternating in one job on gym, atari, marl, dqn (until +-PAIRED_PRECISION or PAIRED_SECONDS), the actors round trip, then the report
	$(START)
	$(SUBMAKE) bench-paired-jobs BENCH_DIR=$(BENCH_DIR)
	$(TRY) $(HARNESS) scenario=actors scenario.num_clients=2 scenario.payload_bytes=0,100000 backend=reactor hydra.sweep.dir=$(BENCH_DIR)/paired/actors
	$(SUBMAKE) report BENCH_DIR=$(BENCH_DIR)/paired
	$(FINISH)

bench-paired-jobs: install
	$(START)
	$(TRY) $(PAIRED) scenario=gym hydra.sweep.dir=$(BENCH_DIR)/paired/gym
	$(TRY) $(PAIRED_WITH_PAPER_RAY) scenario=atari hydra.sweep.dir=$(BENCH_DIR)/paired/atari
	$(TRY) $(PAIRED) scenario=marl scenario.env=synthetic hydra.sweep.dir=$(BENCH_DIR)/paired/marl
	$(TRY) $(PAIRED_WITH_PAPER_RAY) scenario=marl scenario.env=simple_spread_v3 hydra.sweep.dir=$(BENCH_DIR)/paired/marl_simple_spread_v3
	$(TRY) $(PAIRED_WITH_PAPER_RAY) scenario=dqn hydra.sweep.dir=$(BENCH_DIR)/paired/dqn
	$(FINISH)

bench-paper: install ## The paper's twelve configurations at budget=paper (hours to days: prints an estimate first), then the report
	$(START)
	$(TRY) $(PY) scripts/paper_bench.py run --budget paper --backends $(PAPER_BACKENDS) --workers $(PAPER_WORKERS) --out $(PAPER_DIR) $(if $(PAPER_JOB_SECONDS),--job-seconds $(PAPER_JOB_SECONDS))
	$(SUBMAKE) report BENCH_DIR=$(PAPER_DIR)
	$(FINISH)

bench-paper-local: install ## The paper's configurations at budget=local (part of `make bench`)
	$(START)
	$(TRY) $(PY) scripts/paper_bench.py run --budget $(BUDGET) --backends $(PAPER_BACKENDS) --workers $(WORKERS) --out $(BENCH_DIR)/paper
	$(call OWN_REPORT,$(BENCH_DIR)/paper)
	$(FINISH)

report: install ## Statistics, figures and tables for everything under BENCH_DIR (default: results/bench/latest)
	$(PY) -m harness.report $(BENCH_DIR)
	@echo "the report: $(BENCH_DIR)/report/report.html (report.md, summary.csv and figures/ beside it)"

report-check: install ## The report opens with its answer: render the reference runs' report.html headless and check the first screen (skips without chromium)
	$(PY) -m pytest -q tests/report/test_first_screen.py

results-readme: install ## Rewrite README's Results section from the reference full sweep (README_RUN)
	$(PY) -m harness.report $(README_RUN) --readme README.md

archive: install ## Keep BENCH_DIR as results/reference/NAME in its compact form (harness.archive), then edit its README
	@test -n "$(NAME)" || { echo "make archive NAME=<folder under results/reference>"; exit 2; }
	$(PY) -m harness.archive $(BENCH_DIR) results/reference/$(NAME)

# free-threaded CPython (docs/reactor.md, "Threads and free-threaded Python"): none of these is part of
# `make install` / `make test`. python-ft: PYTHON_FT=/path/to/python3.13t uses one you have; otherwise it builds
# upstream CPython with --disable-gil from the source archive apt can fetch (scripts/python_ft.sh)
# FT_OPTIMIZE=1: the PGO+LTO build (--enable-optimizations --with-lto), in a prefix and venv of its own
# (.python-ft-pgo, .venv-ft-pgo) so that both builds can be measured side by side; every *-ft target then uses
# it (bench-ft through REACTORBENCH_FT_PYTHON). PYTHON_FT_VERSION=3.14: another CPython version (where its
# source can be fetched; scripts/python_ft.sh says plainly when it cannot, before building anything)
FT_OPTIMIZE ?= 0
FT_SUFFIX := $(if $(filter 1,$(FT_OPTIMIZE)),-pgo)
FT_PREFIX ?= .python-ft$(FT_SUFFIX)
FT_VENV ?= .venv-ft$(FT_SUFFIX)
FT_PY := $(FT_VENV)/bin/python
FT_TEST_REPEAT ?= 3
python-ft: ## A free-threaded CPython in .python-ft (PYTHON_FT=path: yours; else built from source, ~10 min; FT_OPTIMIZE=1: PGO+LTO in .python-ft-pgo)
	PREFIX=$(CURDIR)/$(FT_PREFIX) FT_OPTIMIZE=$(FT_OPTIMIZE) scripts/python_ft.sh

install-ft: python-ft ## .venv-ft on the free-threaded interpreter: cp313t wheels and the project compiled for it
	FT_PY=$(CURDIR)/$(FT_PREFIX)/bin/python3 VENV_FT=$(CURDIR)/$(FT_VENV) scripts/python_ft_venv.sh

test-ft: ## The thread stress tests, then the runtime's suite on .venv-ft under threads at 2, 4 and 8 workers, each FT_TEST_REPEAT times
	@test -x $(FT_PY) || { echo "test-ft: no $(FT_PY): run make install-ft first"; exit 1; }
	for i in $$(seq $(FT_TEST_REPEAT)); do $(FT_PY) -m pytest -q tests/reactor/test_threads.py tests/reactor/test_threads_ft.py tests/threads/test_threads_safety.py tests/threads/test_threads_atari.py || exit 1; done
	# (torch is there only with FT_TORCH=pypi: the test that needs it is left out; ale-py is built by install-ft)
	for i in $$(seq $(FT_TEST_REPEAT)); do for w in 2 4 8; do \
	  REACTOR_EXECUTORS=threads:$$w $(FT_PY) -m pytest -q -x tests/reactor \
	    --ignore=tests/threads/test_threads_safety.py --ignore=tests/threads/test_threads_atari.py \
	    --deselect tests/reactor/test_processes.py::test_workers_use_torch_after_the_caller_started_its_thread_pool || exit 1; \
	done; done

# the free-threaded reading, paired (docs/harness.md, "Paired blocks"): serial, the threads and processes executors
# and the synchronized ceiling on the free-threaded interpreter, beside serial and both executors on the default
# one, all resident in one job per scenario, so every ratio within and across interpreters is taken within cycles;
# the threads executor at workers=1 in a job of its own (its scaling, each job read against its serial); marl
# and dqn only where .venv-ft has torch (make install-ft FT_TORCH=pypi); the actors round trip paired with serial
# (a round's cost over serial's is what the executor adds: the roles' own Python is serial's round)
FT_DIR ?= $(BENCH_DIR)/ft
FT_PAIRED_BACKENDS ?= serial@ft,reactor_threads@ft,reactor@ft,capacity_lockstep@ft,serial,reactor_threads,reactor
FT_W1_BACKENDS ?= serial@ft,reactor_threads@ft,serial,reactor_threads
FT_ACTORS_BACKENDS ?= serial@ft,reactor_threads@ft,reactor@ft,serial,reactor
# Atari (Pong, 15 envs): the processes executor on the default interpreter first, the threads executor on the
# free-threaded one second (the job's main ratio: threads ft / processes default), then serial on both and the
# processes executor on the free-threaded one (where .venv-ft has ale-py: make install-ft builds it)
FT_ATARI_BACKENDS ?= reactor,reactor_threads@ft,serial,serial@ft,reactor@ft
FT_ALE_OK = $(shell $(FT_PY) -c 'import ale_py' 2>/dev/null && echo yes)
FT_TORCH_OK = $(shell $(FT_PY) -c 'import torch' 2>/dev/null && echo yes)
PAIRED_FT = env REACTORBENCH_FT_PYTHON=$(CURDIR)/$(FT_PY) $(PY) -m harness compare -m budget=$(BUDGET) compare.precision=$(PAIRED_PRECISION) compare.max_seconds=$(PAIRED_SECONDS)
bench-ft: install ## Paired jobs on the default and the free-threaded interpreter (gym; atari with ale-py there; marl synthetic and dqn with torch there), threads at 1 worker, the actors round trip, then the report (make install-ft first)
	@test -x $(FT_PY) || { echo "bench-ft: no $(FT_PY): run make install-ft first"; exit 1; }
	@echo "bench-ft: interpreter=ft is $(FT_PY): $$($(FT_PY) -c 'import sys, sysconfig; print(sys.version.split()[0] + "t, configure:", sysconfig.get_config_var("CONFIG_ARGS"))')"
	$(START)
	$(TRY) $(PAIRED_FT) scenario=gym workers=$(WORKERS) backends=[$(FT_PAIRED_BACKENDS)] hydra.sweep.dir=$(FT_DIR)/gym
	$(TRY) $(PAIRED_FT) scenario=gym workers=1 backends=[$(FT_W1_BACKENDS)] hydra.sweep.dir=$(FT_DIR)/threads_w1/gym
	$(if $(FT_ALE_OK),$(TRY) $(PAIRED_FT) scenario=atari workers=$(WORKERS) backends=[$(FT_ATARI_BACKENDS)] hydra.sweep.dir=$(FT_DIR)/atari,@echo "bench-ft: no ale-py in $(FT_VENV): atari left out (make install-ft builds it)")
	$(if $(FT_TORCH_OK),$(TRY) $(PAIRED_FT) scenario=marl scenario.env=synthetic workers=$(WORKERS) backends=[$(FT_PAIRED_BACKENDS)] hydra.sweep.dir=$(FT_DIR)/marl,@echo "bench-ft: no torch in $(FT_VENV): marl and dqn left out (make install-ft FT_TORCH=pypi)")
	$(if $(FT_TORCH_OK),$(TRY) $(PAIRED_FT) scenario=marl scenario.env=synthetic workers=1 backends=[$(FT_W1_BACKENDS)] hydra.sweep.dir=$(FT_DIR)/threads_w1/marl)
	$(if $(FT_TORCH_OK),$(TRY) $(PAIRED_FT) scenario=dqn workers=$(WORKERS) backends=[$(FT_PAIRED_BACKENDS)] hydra.sweep.dir=$(FT_DIR)/dqn)
	$(TRY) $(PAIRED_FT) scenario=actors scenario.num_clients=2 workers=$(WORKERS) backends=[$(FT_ACTORS_BACKENDS)] hydra.sweep.dir=$(FT_DIR)/actors
	$(SUBMAKE) report BENCH_DIR=$(FT_DIR)
	$(FINISH)

# the offline kit for a lent many-core machine without network (docs/harness.md, "The device kit"): the wheels it
# lacks for its Python (DEVICE_PYTHON), at this venv's versions, in the git-ignored .device/wheels; there,
# `bash scripts/device_sweep.sh` installs them, builds the extension and measures (paired and standalone jobs at
# workers 1-16) within about 8.5 minutes, then writes one tarball into $$OUT
DEVICE_PYTHON ?= 3.12
DEVICE_MAX_MIB ?= 48
device-kit: install ## The offline kit for a lent many-core machine: .device/wheels for Python DEVICE_PYTHON (at most DEVICE_MAX_MIB MiB with the tree)
	$(PY) scripts/device_kit.py --dest .device --python-version $(DEVICE_PYTHON) --max-mib $(DEVICE_MAX_MIB)

# the free-threaded part (issue 46: threads on 3.13t against processes at 16 and 8 workers): .python-ft packed to run
# wherever it is unpacked, and the cp313t wheels its measuring children import (ale-py and PyYAML built here from
# their sdists, once), in .device/ft; there `bash scripts/device_sweep.sh --ft` unpacks, installs and measures
device-kit-ft: install python-ft ## The free-threaded kit for the lent machine: a relocatable 3.13t and its cp313t wheels in .device/ft (FT_OPTIMIZE=1: the PGO+LTO build)
	$(PY) scripts/device_kit_ft.py --dest .device --python $(CURDIR)/$(FT_PREFIX)/bin/python3

# EnvPool (backend=envpool, atari): 1.2.5 is its last release with a Python 3.11 wheel; it brings its asset packages
# (about 600 MB) and changes nothing already installed
install-envpool: install ## Add EnvPool 1.2.5 to .venv (backend=envpool; make bench then runs it on atari)
	$(PY) -m pip install -q envpool==1.2.5

device-local: install ## scripts/device_sweep.sh --local: the device sweep shortened (workers 1, 2) on this machine, to test the kit's path
	bash scripts/device_sweep.sh --local

device-local-ft: install ## scripts/device_sweep.sh --ft --local: the free-threaded kit unpacked and measured here (workers 2), to test its path
	bash scripts/device_sweep.sh --ft --local

clean: ## Remove build products and results (keeps .venv and results/reference)
	rm -rf build *.egg-info reactor_backend/*.c reactor_backend/*.so scenarios/*.c scenarios/*.so .pytest_cache
	find results -mindepth 1 -maxdepth 1 ! -name README.md ! -name reference -exec rm -rf {} +
