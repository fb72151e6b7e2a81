// Package clitest runs the truss command's testscripts: the packages under
// internal/trusscli/scripts each hold a group of them (one package per
// group, so that go test reports each group as it ends) and call Main from
// their TestMain and Run from their test. It holds the scripts' custom
// commands (a simulated model to serve, events and ledgers to check, bench
// tasks to make) and conditions. It is imported by tests only.
package clitest

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/rogpeppe/go-internal/testscript"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/trussdev/truss/examples"
	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/benchcli"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
	"github.com/trussdev/truss/internal/testenv"
	"github.com/trussdev/truss/internal/toolcache"
	"github.com/trussdev/truss/internal/trusscli"
)

// CacheEnv names a directory that, when set, is the build and package
// cache of the sandboxed commands of every package's scripts (.ci/run
// gives the script packages one, so that the standard library is compiled
// once for all of them, not once per package); the caller makes and
// removes it.
const CacheEnv = "TRUSS_TEST_SANDBOX_CACHE"

// scriptCache is the build and package cache the sandboxed commands of
// all the scripts of one test binary share: CacheEnv's, else one under the
// binary's temporary directory (testenv.Run), removed when the tests end.
func scriptCache() string {
	if d := os.Getenv(CacheEnv); filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(os.TempDir(), "sandbox-cache")
}

// Main is the TestMain of a package of scripts: the sandbox's helper when
// the binary is re-executed as one; truss and truss-bench when a script
// runs them (testscript.Main, in-process); else the tests, in a home and
// temporary directory of their own (testenv.Run).
func Main(m testenv.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper() // the sandbox re-executes this binary as its helper
	}
	testscript.Main(testenv.Wrap(m), map[string]func(){
		"truss": func() { os.Exit(trusscli.Main(os.Args[1:], os.Stdout, os.Stderr)) },
		// truss runs it for its bench command, from PATH here.
		"truss-bench": func() { os.Exit(benchcli.Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// Run runs the scripts in dir (testdata/script of the calling package),
// rewriting their cmp files when update is set. Each script gets its own
// TRUSS_HOME beside its work directory, the test binary's HOME and Go
// caches, and the custom commands and conditions below.
func Run(t *testing.T, dir string, update bool) {
	testscript.Run(t, testscript.Params{
		Dir:           dir,
		UpdateScripts: update,
		Setup: func(e *testscript.Env) error {
			e.Values[simsKey{}] = &sims{}
			// Beside the script's directory, not in it: a workspace that
			// holds Truss's own state is refused, and the scripts run in
			// $WORK. (testscript removes both with its root.)
			e.Setenv("TRUSS_HOME", e.WorkDir+".truss-home")
			// HOME and Go's caches are testenv.Run's.
			for _, k := range []string{"HOME", "GOCACHE", "GOPATH", "GOMODCACHE", "GOENV", "PATH", "GOFLAGS"} {
				if v := os.Getenv(k); v != "" {
					e.Setenv(k, v)
				}
			}
			e.Setenv("GOTOOLCHAIN", "local")
			// The scripts' sandboxed commands share one build cache.
			e.Setenv(toolcache.SharedEnv, scriptCache())
			return nil
		},
		Condition: sandboxCondition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"simserve":     simServe,
			"simrequest":   simRequest,
			"unpackdemo":   unpackDemo,
			"checkevents":  checkEvents,
			"lastsession":  lastSession,
			"simcheck":     simCheck,
			"simgrep":      simGrep,
			"checkdsse":    checkDSSE,
			"envimage":     envImage,
			"envleft":      envLeft,
			"waitfile":     waitFile,
			"benchtasks":   benchTasks,
			"gitsha":       gitSHA,
			"envsubst":     envSubst,
			"benchresults": benchResults,
			"queueurl":     queueURL,
			"waitrunning":  waitRunning,
			"benchcheck":   benchCheck,
			"benchjob":     benchJob,
			"freeport":     freePort,
			"waitresults":  waitResults,
			"appendentry":  appendEntry,
			"notapi":       notAPI,
		},
	})
}

// sandboxCondition answers [sandbox:NAME]: whether this host enforces
// the sandbox protection NAME ("memory", "disk-budget", …; see truss
// sandbox check) for a workspace-write sandbox with the network off.
func sandboxCondition(cond string) (bool, error) {
	if cond == "env" {
		return envCondition()
	}
	name, ok := strings.CutPrefix(cond, "sandbox:")
	if !ok {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	name = strings.ReplaceAll(name, "-", " ")
	host := sandbox.Probe()
	pl, err := sandbox.MakePlan(sandbox.DefaultPolicy(os.TempDir(), os.TempDir()), host, sandbox.NoFallback)
	if err != nil {
		return false, nil
	}
	for _, p := range pl.Protections(host) {
		if p.Name == name {
			return p.Enforced, nil
		}
	}
	return false, fmt.Errorf("no sandbox protection %q", name)
}

// simserve DIALECT SCRIPT|demo [ROOT]: serves the simulated model for the
// rest of the script and points the dialect's environment variable at it
// (OLLAMA_HOST for ollama, OPENAI_BASE_URL for chat, ANTHROPIC_BASE_URL and
// ANTHROPIC_API_KEY for anthropic, AZURE_OPENAI_ENDPOINT and
// AZURE_OPENAI_API_KEY for azure, GOOGLE_GEMINI_BASE_URL and
// GEMINI_API_KEY for gemini; for vertex ANTHROPIC_VERTEX_BASE_URL,
// CLOUD_ML_REGION, ANTHROPIC_VERTEX_PROJECT_ID and
// GOOGLE_APPLICATION_CREDENTIALS, a user's credential file in $WORK whose
// token URI is the simulated model's token endpoint, whose tokens alone
// the Vertex routes take; for bedrock ANTHROPIC_BEDROCK_BASE_URL,
// AWS_REGION and the simulated account's keys in AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, the only ones whose signatures the Bedrock
// routes accept, with the shared files pointed at $WORK/aws). ROOT is the
// workspace the model names files in by absolute path.
func simServe(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 && len(args) != 3 {
		ts.Fatalf("usage: simserve ollama|chat|anthropic|responses|azure|gemini|vertex|bedrock SCRIPT|demo [ROOT]")
	}
	b := examples.DemoScript
	if args[1] != "demo" {
		b = []byte(ts.ReadFile(args[1]))
	}
	s, err := sim.ParseScript(b)
	ts.Check(err)
	ctx, cancel := context.WithCancel(context.Background())
	ts.Defer(cancel)
	srv := simtest.New(s)
	switch args[0] {
	case "anthropic":
		srv.APIKey = "sk-ant-test" // before the server starts
	case "responses", "azure":
		srv.APIKey = "sk-test"
	case "gemini":
		srv.APIKey = "gk-test"
	case "vertex", "vertex-gemini":
		srv.APIKey = "sk-no-token-but-issued-ones"
		srv.VertexProject = "sim-project"
	case "bedrock":
		srv.APIKey = "ABSK-sim-bedrock-key" // a Bedrock API key's, when one is sent
	}
	if len(args) == 3 {
		srv.Root, err = filepath.EvalSymlinks(ts.MkAbs(args[2]))
		ts.Check(err)
	}
	base, err := srv.Listen(ctx)
	ts.Check(err)
	ss := ts.Value(simsKey{}).(*sims)
	ss.servers = append(ss.servers, srv)
	ss.dialects = append(ss.dialects, args[0])
	switch args[0] {
	case "ollama":
		ts.Setenv("OLLAMA_HOST", base)
	case "chat":
		ts.Setenv("OPENAI_BASE_URL", base+"/v1")
	case "responses":
		ts.Setenv("OPENAI_BASE_URL", base+"/v1")
		ts.Setenv("OPENAI_API_KEY", "sk-test")
	case "anthropic":
		ts.Setenv("ANTHROPIC_BASE_URL", base)
		ts.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	case "azure":
		ts.Setenv("AZURE_OPENAI_ENDPOINT", base)
		ts.Setenv("AZURE_OPENAI_API_KEY", "sk-test")
	case "gemini":
		ts.Setenv("GOOGLE_GEMINI_BASE_URL", base)
		ts.Setenv("GEMINI_API_KEY", "gk-test")
	case "vertex", "vertex-gemini":
		adc := ts.MkAbs("application_default_credentials.json")
		b, err := json.Marshal(map[string]string{"type": "authorized_user", "client_id": "sim.apps.googleusercontent.com",
			"client_secret": "sim-secret", "refresh_token": "1//sim-refresh", "token_uri": base + "/token"})
		ts.Check(err)
		ts.Check(os.WriteFile(adc, b, 0o600))
		ts.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adc)
		if args[0] == "vertex-gemini" {
			ts.Setenv("GOOGLE_VERTEX_BASE_URL", base)
			ts.Setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
			ts.Setenv("GOOGLE_CLOUD_PROJECT", "sim-project")
			break
		}
		ts.Setenv("ANTHROPIC_VERTEX_BASE_URL", base)
		ts.Setenv("CLOUD_ML_REGION", "us-east5")
		ts.Setenv("ANTHROPIC_VERTEX_PROJECT_ID", "sim-project")
	case "bedrock":
		ts.Setenv("ANTHROPIC_BEDROCK_BASE_URL", base)
		ts.Setenv("AWS_REGION", "us-east-1")
		ts.Setenv("AWS_ACCESS_KEY_ID", sim.BedrockAccessKeyID)
		ts.Setenv("AWS_SECRET_ACCESS_KEY", sim.BedrockSecretAccessKey)
		ts.Setenv("AWS_CONFIG_FILE", ts.MkAbs("aws/config"))
		ts.Setenv("AWS_SHARED_CREDENTIALS_FILE", ts.MkAbs("aws/credentials"))
	default:
		ts.Fatalf("unknown dialect %q", args[0])
	}
}

type simsKey struct{}

// notapi VAR STATUS [FILE]: serves, for the rest of the script, a server
// that is not a model's API: every request is answered with STATUS and
// FILE's content (an empty body without FILE). VAR is set to its address.
func notAPI(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 && len(args) != 3 {
		ts.Fatalf("usage: notapi VAR STATUS [FILE]")
	}
	status, err := strconv.Atoi(args[1])
	ts.Check(err)
	var body string
	if len(args) == 3 {
		body = ts.ReadFile(args[2])
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}

// simgrep REGEXP: some request the last simulated model received has a
// body that matches REGEXP (with !, none has).
func simGrep(ts *testscript.TestScript, neg bool, args []string) {
	ss := ts.Value(simsKey{}).(*sims)
	if len(ss.servers) == 0 || len(args) != 1 {
		ts.Fatalf("usage: simgrep REGEXP (after simserve)")
	}
	re, err := regexp.Compile(args[0])
	ts.Check(err)
	found := false
	for _, r := range ss.servers[len(ss.servers)-1].Requests() {
		found = found || re.Match(r.Body)
	}
	if found == neg {
		ts.Fatalf("simgrep %s: found %v", args[0], found)
	}
}

// sims are the simulated models a script started.
type sims struct {
	servers  []*sim.Server
	dialects []string
}

// simcheck N: checks the requests the last simulated model received: there
// were N, every tool call in each is answered by exactly one result, and
// every Chat Completions, Responses and Messages request matches its API
// description.
func simCheck(ts *testscript.TestScript, neg bool, args []string) {
	ss := ts.Value(simsKey{}).(*sims)
	if len(ss.servers) == 0 || len(args) != 1 {
		ts.Fatalf("usage: simcheck N (after simserve)")
	}
	srv, dialect := ss.servers[len(ss.servers)-1], ss.dialects[len(ss.dialects)-1]
	reqs := srv.Requests()
	if fmt.Sprint(len(reqs)) != args[0] {
		ts.Fatalf("the simulated model got %d requests, want %s", len(reqs), args[0])
	}
	doc, err := apispec.OpenAI()
	ts.Check(err)
	for i, r := range reqs {
		if err := r.CheckPairing(); err != nil {
			ts.Fatalf("request %d: %v", i, err)
		}
		switch dialect {
		case "chat":
			if err := doc.RequestBody("/chat/completions", "POST", r.Body); err != nil {
				ts.Fatalf("request %d does not match the API description: %v", i, err)
			}
		case "responses", "azure": // Azure's body is OpenAI's
			if r.Dialect != dialect {
				ts.Fatalf("request %d came to the %s routes, not %s's", i, r.Dialect, dialect)
			}
			if err := doc.RequestBody("/responses", "POST", r.Body); err != nil {
				ts.Fatalf("request %d does not match the API description: %v", i, err)
			}
		case "gemini", "vertex-gemini": // no published description: the dialect's own checks, and the SDK's wire in the tests
			if r.Dialect != dialect {
				ts.Fatalf("request %d came to the %s routes, not %s's", i, r.Dialect, dialect)
			}
		case "anthropic", "vertex", "bedrock": // Vertex's and Bedrock's requests are the API's once the route is read
			if r.Dialect != dialect {
				ts.Fatalf("request %d came to the %s routes, not %s's", i, r.Dialect, dialect)
			}
			adoc, err := apispec.Anthropic()
			ts.Check(err)
			if err := adoc.RequestBody("/v1/messages", "POST", r.Body); err != nil {
				ts.Fatalf("request %d does not match the API description: %v", i, err)
			}
		}
	}
}

// simrequest N FILE: writes the body of the Nth request (from 1; "last",
// the last) the last simulated model received to FILE, as it came over
// the wire.
func simRequest(ts *testscript.TestScript, neg bool, args []string) {
	ss := ts.Value(simsKey{}).(*sims)
	if len(ss.servers) == 0 || len(args) != 2 {
		ts.Fatalf("usage: simrequest N FILE (after simserve)")
	}
	reqs := ss.servers[len(ss.servers)-1].Requests()
	n, err := strconv.Atoi(args[0])
	if args[0] == "last" {
		n, err = len(reqs), nil
	}
	if err != nil || n < 1 || n > len(reqs) {
		ts.Fatalf("simrequest: the simulated model got %d requests; there is no request %s", len(reqs), args[0])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), reqs[n-1].Body, 0o644))
}

// unpackdemo DIR: writes the demo repository to DIR.
func unpackDemo(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: unpackdemo DIR")
	}
	ts.Check(examples.Unpack(examples.DemoRepo, ts.MkAbs(args[0])))
}

// lastsession VAR: sets VAR to the id of the newest saved session.
func lastSession(ts *testscript.TestScript, neg bool, args []string) {
	ms, err := session.Store{Dir: filepath.Join(ts.Getenv("TRUSS_HOME"), "sessions")}.List()
	ts.Check(err)
	if len(ms) == 0 {
		ts.Fatalf("no sessions")
	}
	ts.Setenv(args[0], ms[0].ID)
}

// checkevents FILE: checks a JSONL event stream's grammar: thread.started,
// turn.started, items (every started item completed once, ids unique), and
// one closing turn.completed or turn.failed; nothing but JSON on any line.
func checkEvents(ts *testscript.TestScript, neg bool, args []string) {
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	var types []string
	started, completed := map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var ev struct {
			Type     string `json:"type"`
			ThreadID *string
			Item     *struct{ ID, Type, Status string }
			Usage    *struct {
				InputTokens  *int64 `json:"input_tokens"`
				OutputTokens *int64 `json:"output_tokens"`
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			ts.Fatalf("line %d is not JSON: %v: %q", n, err, sc.Text())
		}
		types = append(types, ev.Type)
		switch ev.Type {
		case "item.started":
			if started[ev.Item.ID] || completed[ev.Item.ID] {
				ts.Fatalf("line %d: item %s started twice", n, ev.Item.ID)
			}
			started[ev.Item.ID] = true
		case "item.completed":
			if completed[ev.Item.ID] {
				ts.Fatalf("line %d: item %s completed twice", n, ev.Item.ID)
			}
			completed[ev.Item.ID] = true
			if ev.Item.Status == "in_progress" {
				ts.Fatalf("line %d: completed item in progress", n)
			}
		case "turn.completed":
			if ev.Usage == nil || ev.Usage.InputTokens == nil || ev.Usage.OutputTokens == nil {
				ts.Fatalf("line %d: turn.completed without usage", n)
			}
		}
	}
	ts.Check(sc.Err())
	for id := range started {
		if !completed[id] {
			ts.Fatalf("item %s started but never completed", id)
		}
	}
	if len(types) < 3 || types[0] != "thread.started" || types[1] != "turn.started" {
		ts.Fatalf("stream starts %v", types[:min(len(types), 2)])
	}
	if last := types[len(types)-1]; last != "turn.completed" && last != "turn.failed" {
		ts.Fatalf("stream ends with %s", last)
	}
	ts.Logf("%d events: %s", len(types), strings.Join(types, " "))
	fmt.Fprint(ts.Stdout(), "")
}

// checkdsse FILE: verifies an in-toto DSSE envelope with the installation's
// ledger key and checks its statement.
func checkDSSE(ts *testscript.TestScript, neg bool, args []string) {
	kd := ts.Getenv("TRUSS_HOME")
	priv, err := ledger.PrivateKey(kd)
	ts.Check(err)
	vk, err := os.ReadFile(filepath.Join(kd, "ledger.vkey"))
	ts.Check(err)
	body, err := ledger.VerifyExport([]byte(ts.ReadFile(args[0])), strings.TrimSpace(string(vk)), priv.Public().(ed25519.PublicKey))
	if neg {
		if err == nil {
			ts.Fatalf("the envelope verified")
		}
		return
	}
	ts.Check(err)
	st := &intoto.Statement{}
	ts.Check(protojson.Unmarshal(body, st))
	ts.Check(st.Validate())
	ts.Logf("statement: %d subjects, predicate %s", len(st.Subject), st.PredicateType)
}
