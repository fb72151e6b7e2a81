package runner

import (
	"fmt"
	"runtime/debug"

	"github.com/trussdev/truss/internal/cli"
	"github.com/trussdev/truss/internal/queue"
)

// GraderVersion is the version of how runs are graded and their verdicts
// recorded. It changes only when a verdict of the same run would (the
// grading rules, the verdict entry's meaning); workers whose grader
// version differs from the coordinator's are refused. 3: a worker makes
// its runs in a private directory and its gradings hide and cover what
// the coordinator's do (JobPayload.GradeHidden, GradeCovered); an older
// worker's graded commands could read what this one's cannot.
const GraderVersion = 3

// Version is what a worker's verdicts say of the worker.
type Version struct {
	// Build is the binary's version and VCS revision
	// ("0.1.0-dev+1a2b3c4d5e6f", "-dirty" when built from a modified
	// tree).
	Build string `json:"build"`
	// Grader is GraderVersion; Protocol is queue.ProtocolVersion.
	Grader   int `json:"grader"`
	Protocol int `json:"protocol"`
}

// String is the version as results.jsonl records it.
func (v Version) String() string {
	return fmt.Sprintf("%s grader/%d protocol/%d", v.Build, v.Grader, v.Protocol)
}

// Compatible reports whether a worker of version w may make runs for a
// coordinator of version v: the same grader and protocol versions (the
// builds may differ).
func (v Version) Compatible(w Version) bool {
	return v.Grader == w.Grader && v.Protocol == w.Protocol
}

// ThisVersion is this binary's Version: cli.Version, the VCS revision the
// Go toolchain stamped into the build (debug.ReadBuildInfo; none for a
// test binary or a build outside a repository), and the grader and
// protocol versions.
func ThisVersion() Version {
	return Version{Build: BuildVersion(), Grader: GraderVersion, Protocol: queue.ProtocolVersion}
}

// BuildVersion is cli.Version with the build's VCS revision, when the
// toolchain recorded one.
func BuildVersion() string {
	v := cli.Version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v += "+" + rev
	if modified == "true" {
		v += "-dirty"
	}
	return v
}
