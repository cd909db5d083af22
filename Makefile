# lockwarden — make run (demo console), make test (every test), make bench.
# `deps` installs only what is missing; it is quick when everything is there.

SHELL := /bin/bash
GO    ?= go
SUDO  := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# The playwright driver must match the playwright-go version pinned in go.mod.
# playwright-go records the driver version it speaks as playwrightCliVersion.
# Evaluated once; `go mod download` fetches the module on a fresh machine.
PW_GO_DIR  := $(shell $(GO) mod download -json github.com/playwright-community/playwright-go 2>/dev/null | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$$/\1/p')
PW_VERSION := $(shell sed -n 's/^const playwrightCliVersion = "\(.*\)"/\1/p' $(PW_GO_DIR)/run.go 2>/dev/null)
PW_DRIVER  := $(HOME)/.cache/lockwarden/playwright-driver-$(PW_VERSION)
CHROMIUM  ?= /usr/bin/chromium

# The foreign clients store/inspect's tests drive: Node.js packages pinned
# in FOREIGN_PKG, installed into a directory named by that file's hash (as
# store/inspect/internal/inspecttest.ForeignNPMDir computes it), and
# Debian's Symfony Lock with phpredis and redis-py.
FOREIGN_PKG := store/inspect/internal/inspecttest/foreign/package.json
FOREIGN_NPM := $(HOME)/.cache/lockwarden/foreign-npm-$(shell sha256sum $(FOREIGN_PKG) 2>/dev/null | cut -c1-12)
FOREIGN_DEB := php-cli php-redis php-symfony-lock python3-redis

export PLAYWRIGHT_DRIVER_PATH = $(PW_DRIVER)
export PLAYWRIGHT_NODEJS_PATH = $(shell command -v node)
export LOCKWARDEN_CHROMIUM    = $(CHROMIUM)

# apt_install PACKAGE COMMAND: install a Debian package when COMMAND is missing.
define apt_install
	@if ! command -v $(2) >/dev/null 2>&1; then \
		echo "deps: installing $(1) (missing $(2))"; \
		if [ ! -f /tmp/.lockwarden-apt-updated ]; then $(SUDO) apt-get update -qq && touch /tmp/.lockwarden-apt-updated; fi; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1) >/dev/null; \
		command -v $(2) >/dev/null || { echo "deps: $(1) did not provide $(2)"; exit 1; }; \
	fi
endef

.PHONY: all deps deps-redis deps-browser deps-foreign deps-faults deps-uplot install-uplot check-uplot run test test-go test-cluster test-e2e test-faults bench generate lint check-generated clean help

all: test

help:
	@echo "make run    - start lockwarden on a private redis-server with demo traffic"
	@echo "make test   - install what is missing and run every test (Go, Cluster, then browser)"
	@echo "make test-cluster - the store, store/inspect and web suites again on a private Redis Cluster"
	@echo "make test-faults - the fault matrix and the network partitions (namespaces, root only)"
	@echo "make bench  - benchmarks (not part of make test)"
	@echo "make lint   - gofmt, go vet, generated code up to date"

deps: deps-redis deps-browser deps-uplot deps-foreign

deps-redis:
	$(call apt_install,redis-server,redis-server)
	$(call apt_install,prometheus,promtool)

# The partition test cuts links between network namespaces with iptables.
deps-faults:
	$(call apt_install,iptables,iptables)

deps-browser:
	$(call apt_install,chromium,chromium)
	@[ -n "$(PW_VERSION)" ] || { echo "deps: cannot read the playwright driver version from playwright-go in go.mod (go mod download failed?)"; exit 1; }
	@command -v node >/dev/null || { echo "deps: node is required for the playwright driver (apt-get install nodejs npm)"; exit 1; }
	@if ! [ -f "$(PW_DRIVER)/package/cli.js" ] || ! node "$(PW_DRIVER)/package/cli.js" --version 2>/dev/null | grep -q "$(PW_VERSION)"; then \
		echo "deps: installing playwright driver $(PW_VERSION) (playwright-core from npm) into $(PW_DRIVER)"; \
		rm -rf "$(PW_DRIVER)" && mkdir -p "$(PW_DRIVER)" && \
		npm install --silent --no-audit --no-fund --prefix "$(PW_DRIVER)" "playwright-core@$(PW_VERSION)" >/dev/null && \
		ln -sfn node_modules/playwright-core "$(PW_DRIVER)/package" && \
		node "$(PW_DRIVER)/package/cli.js" --version; \
	fi

deps-foreign:
	@missing=""; for p in $(FOREIGN_DEB); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; \
		if [ ! -f /tmp/.lockwarden-apt-updated ]; then $(SUDO) apt-get update -qq && touch /tmp/.lockwarden-apt-updated; fi; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@command -v node >/dev/null || { echo "deps: node is required for the foreign clients (apt-get install nodejs npm)"; exit 1; }
	@if ! [ -f "$(FOREIGN_NPM)/.installed" ]; then \
		echo "deps: installing the foreign Node.js clients ($(FOREIGN_PKG)) into $(FOREIGN_NPM)"; \
		rm -rf "$(FOREIGN_NPM)" && mkdir -p "$(FOREIGN_NPM)" && cp $(FOREIGN_PKG) "$(FOREIGN_NPM)/package.json" && \
		npm install --silent --no-audit --no-fund --prefix "$(FOREIGN_NPM)" >/dev/null && \
		touch "$(FOREIGN_NPM)/.installed"; \
	fi

run: deps-redis
# uPlot draws the console's charts (static/charts.js). It comes from npm at
# a pinned version: install-uplot fetches the tarball with `npm pack`,
# checks it against the registry's sha512 (UPLOT_INTEGRITY), and writes its
# dist files into static/vendor/uplot/, where go:embed finds them. Only
# their SHA256SUMS are committed (the files are git-ignored), so a checkout
# without them still builds and vets; make run, make test (deps) and CI
# install them, and check-uplot (make lint) and static's tests refuse files
# that differ from the sums. After changing UPLOT_VERSION and
# UPLOT_INTEGRITY, `make install-uplot UPLOT_PIN=1` writes new sums.
UPLOT_VERSION   := 1.6.32
UPLOT_INTEGRITY := sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==
UPLOT_DIR       := static/vendor/uplot
UPLOT_FILES     := uPlot.iife.min.js uPlot.min.css LICENSE

deps-uplot:
	@(cd $(UPLOT_DIR) 2>/dev/null && sha256sum --quiet --strict -c SHA256SUMS >/dev/null 2>&1) || $(MAKE) --no-print-directory install-uplot

install-uplot:
	@command -v npm >/dev/null || { echo "deps: npm is required to install uPlot (apt-get install npm)"; exit 1; }
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	echo "deps: installing uPlot $(UPLOT_VERSION) (npm) into $(UPLOT_DIR)" && \
	(cd "$$tmp" && npm pack --silent "uplot@$(UPLOT_VERSION)" >/dev/null) && \
	tgz="$$tmp/uplot-$(UPLOT_VERSION).tgz" && \
	got=$$(node -e 'const c=require("crypto"),f=require("fs");process.stdout.write("sha512-"+c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$$tgz") && \
	{ [ "$$got" = "$(UPLOT_INTEGRITY)" ] || { echo "deps: uplot-$(UPLOT_VERSION).tgz has integrity $$got, want $(UPLOT_INTEGRITY)"; exit 1; }; } && \
	tar -xzf "$$tgz" -C "$$tmp" && mkdir -p $(UPLOT_DIR) && \
	cp "$$tmp/package/dist/uPlot.iife.min.js" "$$tmp/package/dist/uPlot.min.css" "$$tmp/package/LICENSE" $(UPLOT_DIR)/ && \
	if [ -n "$(UPLOT_PIN)" ]; then (cd $(UPLOT_DIR) && sha256sum $(UPLOT_FILES) > SHA256SUMS); fi && \
	(cd $(UPLOT_DIR) && sha256sum --quiet --strict -c SHA256SUMS)

check-uplot:
	@(cd $(UPLOT_DIR) && sha256sum --quiet --strict -c SHA256SUMS) || { echo "lint: $(UPLOT_DIR) differs from uPlot $(UPLOT_VERSION)'s pinned sums: run 'make install-uplot'"; exit 1; }

run: deps-redis deps-uplot
	$(GO) run ./cmd/lockwarden demo

# The Cluster suites and the browser journeys run side by side: both spend
# most of their time waiting on redis-server and timers. Each one's output
# is printed whole when it ends.
test: deps test-go
	$(MAKE) --no-print-directory -j2 --output-sync=target test-cluster test-e2e

# The store suite again on a private 3-master Redis Cluster (redistest.Main
# starts it; redistest.Client and Universal route every key by slot). Not
# run there, and why (test-go runs them all on one node):
# - Example*, TestLateReply*, TestScriptQueueLostReplyNotResent,
#   TestLockSubscribeFailureIsNotObtained dial the
#   first master directly or through a proxy in front of it: MOVED for the
#   other slots;
# - TestLockWait(SharesOneConnection|LeavesNoSubscriptions) count
#   subscribers with PUBSUB NUMSUB, which is per node (on a Cluster it asks
#   whichever node the client picks, so a leak could read as 0);
# - TestBatchConcurrentCallsSharePipelines, TestBatchCallerContextBoundsItsWait,
#   TestBatchAnsweredCallersJoinTheNextBatch count the pipelines a hook on the
#   *redis.Client sees; on a Cluster the Cluster client sends them;
# - TestBatchAnswersEachCall, TestLock*UncontendedCommands and
#   TestShardedPubSubInterop start a server or Cluster of their own: the
#   Cluster run would only repeat them.
CLUSTER_STORE_SKIP := Example.*|TestLateReply.*|TestScriptQueueLostReplyNotResent|TestLockSubscribeFailureIsNotObtained|TestLockWait(SharesOneConnection|LeavesNoSubscriptions)|TestBatchConcurrentCallsSharePipelines|TestBatchCallerContextBoundsItsWait|TestBatchAnswersEachCall|TestBatchAnsweredCallersJoinTheNextBatch|TestLock(Kinds)?UncontendedCommands|TestShardedPubSubInterop
# Then the console's web suite with its console on the Cluster (newEnv
# builds it over a ClusterClient, as serve does), except the tests that
# build their console over a topology of their own: TestCluster* and
# TestSentinel* (a private Cluster or Sentinel), and those on a private
# single redis-server (redistest.StartT + newEnvOn, or openMarked for the
# TestViewer* tests, which count a request's commands), which the Cluster
# run would only repeat.
CLUSTER_WEB_SKIP := TestCluster.*|TestSentinel.*|TestFaultRedisDownAndBack|TestFaultStructuredLogs|TestFaultWebsocketCyclesNoLeak|TestListingLocksPagedSortedFiltered|TestNodeProbeRidesOnTicksOnOneNode|TestSecHostileNames|TestStatusDiscoveryOfAnnouncedLock|TestStatusListsFullPassFinds|TestStatusSampleAfterASlowFullPass|TestViewerByNameNeverReadsALargeHash|TestViewerPerClientLimiterPageNeverScans
# Then the console's view of Redis (store/inspect and its rooms), its
# Inspectors over a ClusterClient as serve builds them
# (redistest.UniversalFor), except the tests that build a topology of their
# own: a private Cluster (TestEventsShardedOnCluster, TestNodesHung*,
# TestSampleHungMasterLeavesOthersLive, TestSampleClusterDownKeepsSampling,
# TestDiscoverCluster, TestWalkClusterKeyEventsPerMaster), a private
# server they stop, pause or restart (TestEventsSurviveRestart,
# TestEventsSubscribeFailsWhenRedisIsDown, TestSampleSingleNodeDownFails,
# TestDiscoverFailsWhenRedisIsDown, TestNodeFailureTellsNodeFromKey), or a
# private server whose whole keyspace or command counts they read
# (inspecttest.Private, redistest.StartT: TestGetByName*, TestStats-
# OneCommandPerCount, TestGlobMatchAgreesWithRedisKeys, the family and walk
# tests on newEnv and newWalkEnv, TestWalkerIncrementalDiscovery, whose
# walker SCANs in the sample only on one server, and TestSamplingCost-
# IdleObjects): the Cluster run would only repeat them. The TestForeign*
# tests drive real libraries (ioredis, phpredis, redis-py) as the
# single-server clients they are configured as; on a Cluster node they
# would only be answered MOVED. sidekiq-unique-jobs keeps one digests set
# beside every job's keys, a layout that cannot live on a Cluster
# (TestConventionSidekiqUniqueJobs). The what-if's replay is topology-blind:
# TestReplayAtEveryPhase replays recordings from testdata and never talks
# to Redis, and TestReplayOfPacedTraffic's limiters are store's, which its
# suite runs on the Cluster; the Cluster run would only repeat them.
CLUSTER_INSPECT_SKIP := TestForeign.*|TestConventionSidekiqUniqueJobs|TestReplay(AtEveryPhase|OfPacedTraffic)|TestEvents(ShardedOnCluster|SurviveRestart|SubscribeFailsWhenRedisIsDown)|TestNodesHung.*|TestSample(HungMasterLeavesOthersLive|ClusterDownKeepsSampling|SingleNodeDownFails)|TestDiscover(Cluster|FailsWhenRedisIsDown|RemembersRejectsAcrossPasses)|TestNodeFailureTellsNodeFromKey|TestGetByName.*|TestStatsOneCommandPerCount|TestGlobMatchAgreesWithRedisKeys|TestFamily(ClientsFromReadings|ManyCountersOneRowBoundedReads|PageRidesTheTickPipeline)|TestWalk[A-Z].*|TestWalkerIncrementalDiscovery|TestSamplingCostIdleObjects
# All three suites in one go test, so they run side by side: one -skip
# holds the lists (no name in one list is a test of another package).
test-cluster: deps-redis
	LOCKWARDEN_TEST_TOPOLOGY=cluster $(GO) test -race -count=1 -p 4 -timeout 5m -skip '^($(CLUSTER_STORE_SKIP)|$(CLUSTER_WEB_SKIP)|$(CLUSTER_INSPECT_SKIP))$$' ./store/ ./store/inspect/... ./web/...

# Four packages at once: most of their time is spent waiting on
# redis-server processes and timers, not on the two cores. go test starts
# packages in the order given, so the longest go first (LONG_PKGS, longest
# first): listed alphabetically, web (over 2 min) started after two
# minutes and ended the run alone.
# TestPartitions runs in test-faults: it builds network namespaces (root)
# and takes a few minutes of cut links and failovers.
LONG_PKGS := ./web ./store ./store/faulttest ./cmd/lockwarden ./store/inspect/whatif ./store/inspect ./static
test-go:
	$(GO) vet ./...
	$(GO) test -race -count=1 -p 4 -timeout 15m -skip '^TestPartitions$$' $(LONG_PKGS) \
		$$($(GO) list ./... | grep -v /e2e | grep -vxF "$$($(GO) list $(LONG_PKGS))")

# The fault matrix (kinds x faults through a proxy) and the partitions:
# Redis servers and a Sentinel in network namespaces of their own, links
# cut with iptables. Namespaces that cannot be made fail the run here
# (LOCKWARDEN_REQUIRE_NETNS); elsewhere the partition test skips saying why.
test-faults: deps-redis deps-faults
	LOCKWARDEN_REQUIRE_NETNS=1 $(GO) test -race -count=1 -timeout 15m -v \
		-run '^(TestLocksUnderFaults|TestLimitersUnderFaults|TestPartitions)$$' ./store/faulttest/

# Browser tests fail (never skip) when make runs them: deps installed the browser.
test-go test-e2e: export LOCKWARDEN_REQUIRE_BROWSER = 1
# So do the tests that drive foreign clients: deps installed them.
test-go: export LOCKWARDEN_REQUIRE_FOREIGN = 1
# So does the promtool check of /metrics.
test-go: export LOCKWARDEN_REQUIRE_PROMTOOL = 1

test-e2e:
	$(GO) test -race -count=1 -timeout 10m ./e2e/...

# Starts its own redis-server, runs every case interleaved with the peers and
# writes BENCHMARKS.md (see e2e/bench). make test runs only a smoke pass.
bench: deps-redis
	LOCKWARDEN_BENCH_OUT=$(CURDIR)/BENCHMARKS.md $(GO) test -run '^TestBenchReport$$' -count=1 -timeout 35m -v ./e2e/bench/

# templ records each component's file path relative to where it runs, so it
# always runs inside views/ (as `go generate ./views` does). The scripts in
# luascripts/*.lua are written from luascripts/src and luascripts/lib.
generate:
	cd views && $(GO) tool templ generate
	$(GO) generate ./luascripts

# The committed *_templ.go and luascripts/*.lua must be exactly what the
# generators write (a script that is new or gone shows in git status).
check-generated: generate
	@git diff --exit-code -- '*_templ.go' || { echo "lint: run 'make generate' and commit the *_templ.go files"; exit 1; }
	@test -z "$$(git status --porcelain -- ':(glob)luascripts/*.lua')" || { git status --short -- ':(glob)luascripts/*.lua'; echo "lint: run 'make generate' and commit luascripts/*.lua"; exit 1; }

lint: check-generated check-uplot
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "lint: gofmt needed"; exit 1; }
	$(GO) vet ./...

clean:
	$(GO) clean -testcache
