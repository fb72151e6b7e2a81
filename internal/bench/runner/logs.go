package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/swebench"
	"github.com/trussdev/truss/internal/ledger"
)

// The files of an instance's directory in the official harness's logs
// (logs/run_evaluation/RUN/MODEL/INSTANCE_ID/).
const (
	LogTestOutput = "test_output.txt"
	LogReport     = "report.json"
	LogPatch      = "patch.diff"
)

// maxLog bounds a log read: a larger one is an error, not a verdict.
const maxLog = 256 << 20

// LogGrading grades published harness logs (`truss bench grade --logs`):
// for each task with a directory LOGS/INSTANCE_ID holding test_output.txt,
// the official rules' verdict of that log, without running anything. Each
// verdict is a result line in Out's results.jsonl (arm Arm, repeat 1) and a
// signed ledger of its own holding the log, the patch when the directory
// has one, the verdict with the rules that made it, and the report.json
// those rules write (also written to Out/reports/INSTANCE_ID/report.json).
// When the directory holds the official report.json, the verdict records
// whether it is the same. Instances already in Out's results are skipped.
type LogGrading struct {
	Tasks []bench.Task
	Logs  string
	Out   string
	// Arm names the results' arm (the graded submission).
	Arm string
	// Rules are the harness release's rules; "" takes each log's own
	// (swebench.DetectRules).
	Rules  swebench.Rules
	Signer note.Signer
	// Progress is told of each verdict.
	Progress func(Progress)
}

// LogSummary is a Summary with what the logs held: the instances of the
// task file without a log directory, and how the verdicts compared with
// the official report.json where there was one.
type LogSummary struct {
	Summary
	NoLog           []string
	Official, Agree int
	// Disagree lists the instances whose verdict is not their report.json's.
	Disagree []string
}

// Run grades every log not yet graded.
func (g *LogGrading) Run(ctx context.Context) (*LogSummary, error) {
	if g.Signer == nil || g.Out == "" || g.Logs == "" || g.Arm == "" {
		return nil, errors.New("log grading: Signer, Logs, Arm and Out are required")
	}
	if g.Rules != "" {
		if err := g.Rules.Check(); err != nil {
			return nil, err
		}
	}
	rf, err := bench.OpenResults(g.Out)
	if err != nil {
		return nil, err
	}
	defer rf.Close()
	sum := &LogSummary{Summary: Summary{Resolved: map[string]int{}}}
	started := time.Now()
	for i := range g.Tasks {
		t := &g.Tasks[i]
		dir := filepath.Join(g.Logs, t.InstanceID)
		if _, err := os.Stat(filepath.Join(dir, LogTestOutput)); errors.Is(err, fs.ErrNotExist) {
			sum.NoLog = append(sum.NoLog, t.InstanceID)
			continue
		}
		sum.Total++
		if res, ok := rf.Done(bench.RunKey{InstanceID: t.InstanceID, Arm: g.Arm, Repeat: 1}); ok {
			sum.Skipped++
			if res.Resolved {
				sum.Resolved[g.Arm]++
			}
			if res.Error != "" {
				sum.Errors++
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		res, official, agree := g.gradeLog(t, dir)
		if err := rf.Add(res); err != nil {
			return sum, err
		}
		sum.Ran++
		if res.Resolved {
			sum.Resolved[g.Arm]++
		}
		if res.Error != "" {
			sum.Errors++
		}
		if official {
			sum.Official++
			if agree {
				sum.Agree++
			} else {
				sum.Disagree = append(sum.Disagree, t.InstanceID)
			}
		}
		if g.Progress != nil {
			g.Progress(Progress{Done: sum.Skipped + sum.Ran, Total: sum.Total, Last: res, Resolved: copyMap(sum.Resolved),
				Elapsed: time.Since(started), RanNow: sum.Ran, Parallel: 1})
		}
	}
	return sum, nil
}

// gradeLog grades one instance's log directory into a result and its
// ledger; official reports whether the directory held a report.json, and
// agree whether the verdict's report is the same.
func (g *LogGrading) gradeLog(t *bench.Task, dir string) (res bench.Result, official, agree bool) {
	start := time.Now()
	res = bench.Result{InstanceID: t.InstanceID, Arm: g.Arm, Repeat: 1, Tests: map[string]string{},
		ToolCalls: map[string]int{}, CapabilityCalls: map[string]int{}}
	defer func() { res.WallS = time.Since(start).Seconds() }()
	ldir := LedgerDir(g.Out, t.InstanceID, g.Arm, 1)
	if err := os.MkdirAll(filepath.Dir(ldir), 0o755); err != nil {
		res.Error = "ledger: " + err.Error()
		return res, false, false
	}
	lw, err := ledger.Create(ldir, fmt.Sprintf("grade-log.%s.%s", t.InstanceID, safeName(g.Arm)), g.Signer)
	if err != nil {
		res.Error = "ledger: " + err.Error()
		return res, false, false
	}
	defer lw.Close()
	res.Ledger.Dir = ldir

	data := map[string]any{"instance_id": t.InstanceID, "arm": g.Arm, "repeat": 1, "source": "log"}
	payloads := map[string]string{}
	put := func(name string, b []byte) {
		if d, err := lw.Put(b); err == nil {
			payloads[name] = d
		} else if res.Error == "" {
			res.Error = "ledger: " + err.Error()
		}
	}
	var v *swebench.Verdict
	log, err := readCapped(filepath.Join(dir, LogTestOutput))
	if err == nil {
		put("log", log)
		rules := g.Rules
		if rules == "" {
			rules = swebench.DetectRules(string(log))
		}
		inst := swebench.Instance{InstanceID: t.InstanceID, Repo: t.Repo, Version: t.Version, FailToPass: t.FailToPass, PassToPass: t.PassToPass}
		v, err = swebench.Grade(inst, string(log), rules)
	}
	if patch, perr := readCapped(filepath.Join(dir, LogPatch)); perr == nil {
		put("patch", patch)
	}
	if err != nil {
		res.Error = "grading: " + err.Error()
	} else {
		res.Resolved, res.PatchApplied, res.Tests, res.Rules = v.Resolved, v.PatchApplied, v.Tests, string(v.Rules)
		rep := v.Report()
		report := rep.MarshalPython()
		put("report", report)
		data["verdict"] = v
		data["rules"] = v.Rules
		if b, rerr := readCapped(filepath.Join(dir, LogReport)); rerr == nil {
			official = true
			if o, perr := swebench.ParseReport(b); perr == nil {
				agree = rep.Equal(o)
			}
			data["official_report_agrees"] = agree
			put("official_report", b)
		}
		out := filepath.Join(g.Out, "reports", safeName(t.InstanceID), LogReport)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err == nil {
			err = bench.WriteFileAtomic(out, report)
			if err != nil && res.Error == "" {
				res.Error = "report: " + err.Error()
			}
		}
	}
	data["resolved"] = res.Resolved
	if res.Error != "" {
		data["error"] = res.Error
	}
	if _, err := lw.Append("bench.verdict", data, payloads); err != nil {
		if res.Error == "" {
			res.Error = "ledger: " + err.Error()
		}
		return res, official, agree
	}
	_, root, _, err := lw.Seal()
	if err != nil && res.Error == "" {
		res.Error = "ledger: " + err.Error()
	}
	res.Ledger.Root = fmt.Sprintf("%x", root)
	return res, official, agree
}

// readCapped reads a file of the logs, refusing one past maxLog.
func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxLog+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxLog {
		return nil, fmt.Errorf("%s: more than %d MiB", path, maxLog>>20)
	}
	return b, nil
}
