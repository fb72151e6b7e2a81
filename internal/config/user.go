package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/trussdev/truss/internal/hostfs"
)

// UserFile is the user's configuration file's name, in UserDir.
const UserFile = "config.toml"

// User is the user's own configuration (UserPath): what a repository must
// never decide. A project's .truss/config.toml cannot set any of it,
// trusted or not (Parse refuses those keys).
type User struct {
	// Approval is the default approval policy ("never", "on-request",
	// "untrusted"); a flag overrides it.
	Approval string `toml:"approval"`
	// ApprovalEdits is the default of whether a person is asked before
	// every file edit ("ask") or not ("accept", the default); a flag
	// overrides it. A run nobody can answer refuses to start with "ask"
	// (docs/approvals.md).
	ApprovalEdits string `toml:"approval_edits"`
	// ShellEnvironment adjusts which of Truss's environment variables
	// commands get, after Truss's own rule (docs/sandbox.md): Include
	// passes variables the rule withholds, Exclude withholds more. Each
	// entry is a name or a glob (path.Match: AWS_*, *_URL).
	ShellEnvironment struct {
		Include []string `toml:"include"`
		Exclude []string `toml:"exclude"`
	} `toml:"shell_environment"`
	// Sandbox adds paths no command may read (Hidden) and releases paths
	// of the default hidden credentials (Release); "~/" is the home
	// directory.
	Sandbox struct {
		Hidden  []string `toml:"hidden"`
		Release []string `toml:"release"`
	} `toml:"sandbox"`
}

// UserDir is the directory of the user's configuration: $TRUSS_HOME, else
// $XDG_CONFIG_HOME/truss, else ~/.config/truss (where the ledger key is).
func UserDir() (string, error) {
	if h := os.Getenv("TRUSS_HOME"); h != "" {
		return h, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory: set TRUSS_HOME: %w", err)
	}
	return filepath.Join(d, "truss"), nil
}

// LoadUser reads the user's configuration at file; a missing file is the
// zero User. The file is read from no link and no FIFO; an unknown key or
// a bad value is an error naming the file.
func LoadUser(file string) (*User, error) {
	var u User
	b, err := hostfs.ReadFile(file, MaxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return &u, nil
	}
	if err != nil {
		return nil, err
	}
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil {
		return nil, fmt.Errorf("%s: %s", file, tomlError(err))
	}
	switch u.Approval {
	case "", "never", "on-request", "untrusted":
	default:
		return nil, fmt.Errorf("%s: approval %q: use never, on-request or untrusted", file, u.Approval)
	}
	switch u.ApprovalEdits {
	case "", "ask", "accept":
	default:
		return nil, fmt.Errorf("%s: approval_edits %q: use ask (ask before every file edit, showing its diff) or accept (make edits without asking)", file, u.ApprovalEdits)
	}
	for _, g := range append(append([]string(nil), u.ShellEnvironment.Include...), u.ShellEnvironment.Exclude...) {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("%s: shell_environment: bad pattern %q: %w", file, g, err)
		}
	}
	return &u, nil
}

// tomlError is err with its line and column, or the unknown key, when
// the decoder says them.
func tomlError(err error) string {
	var missing *toml.StrictMissingError
	if errors.As(err, &missing) && len(missing.Errors) > 0 {
		return fmt.Sprintf("unknown setting %q", strings.Join(missing.Errors[0].Key(), "."))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Sprintf("line %d, column %d: %s", row, col, de.Error())
	}
	return err.Error()
}

// ExpandHome returns p with a leading "~/" made the home directory.
func ExpandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		return filepath.Join(home, rest)
	}
	return p
}

// userOnly are the settings of User: a project's configuration naming one
// is refused with a message saying where it belongs.
func userOnly(b []byte) error {
	var m map[string]any
	if toml.Unmarshal(b, &m) != nil {
		return nil // the strict decode reports it
	}
	var keys []string
	for _, k := range []string{"approval", "approval_edits", "shell_environment"} {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
		}
	}
	if sb, ok := m["sandbox"].(map[string]any); ok {
		for _, k := range []string{"hidden", "release"} {
			if _, ok := sb[k]; ok {
				keys = append(keys, "sandbox."+k)
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return fmt.Errorf("%s belong%s in the user's configuration (%s in Truss's directory, ~/.config/truss or $TRUSS_HOME), which no repository can write: a project cannot set %s",
		strings.Join(keys, ", "), map[bool]string{true: "s", false: ""}[len(keys) == 1], UserFile, map[bool]string{true: "it", false: "them"}[len(keys) == 1])
}
