package runner

import (
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/validate"
)

// confined is s with hidden and covered added to what every grading's
// commands hide and cover, where s can hide paths (grade.HidingShells;
// a container's shells see no host path and are returned as they are).
func confined(s grade.Shells, hidden, covered []string) grade.Shells {
	hs, ok := s.(grade.HidingShells)
	if _, perTask := s.(grade.TaskShells); !ok || perTask || len(hidden)+len(covered) == 0 {
		return s
	}
	return confinedShells{s: s, hs: hs, hidden: hidden, covered: covered}
}

// confinedShells are a grader's shells with a job's further hidden and
// covered paths (JobPayload.GradeHidden and GradeCovered).
type confinedShells struct {
	s               grade.Shells
	hs              grade.HidingShells
	hidden, covered []string
}

// Open implements grade.Shells.
func (c confinedShells) Open(dir string, env []string) (validate.Shell, error) {
	return c.OpenHiding(dir, env, nil, nil, nil)
}

// OpenHiding implements grade.HidingShells.
func (c confinedShells) OpenHiding(dir string, env, hidden, covered, writable []string) (validate.Shell, error) {
	return c.hs.OpenHiding(dir, env, append(append([]string(nil), hidden...), c.hidden...), append(append([]string(nil), covered...), c.covered...), writable)
}

// Private implements grade.Private: the shells' own.
func (c confinedShells) Private() []string {
	if p, ok := c.s.(grade.Private); ok {
		return p.Private()
	}
	return nil
}
