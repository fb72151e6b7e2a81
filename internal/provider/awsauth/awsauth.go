// Package awsauth finds AWS credentials and the region for Amazon
// Bedrock the way AWS's SDKs and CLI do, for the part of their chain that
// lives on the user's machine, without aws-sdk-go-v2's config package
// (whose init functions and service clients cost every start of the
// program thousands of allocations; docs/performance.md).
//
// The chain, in the SDKs' order:
//
//  1. AWS_BEARER_TOKEN_BEDROCK: a Bedrock API key, sent as a bearer token
//     instead of a signature.
//  2. AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN with
//     temporary keys).
//  3. The shared files: the profile AWS_PROFILE names ("default" when
//     unset) in the credentials file (AWS_SHARED_CREDENTIALS_FILE, else
//     ~/.aws/credentials) and the config file (AWS_CONFIG_FILE, else
//     ~/.aws/config, where the profile's section is "[profile NAME]"):
//     static keys (aws_access_key_id, aws_secret_access_key,
//     aws_session_token), else credential_process, a command that prints
//     keys as JSON, run again only once they expire.
//
// The region is AWS_REGION, else AWS_DEFAULT_REGION, else the profile's
// region in the config file.
//
// A profile that needs AWS's services to get keys (role_arn: STS;
// sso_session or sso_start_url: IAM Identity Center; web_identity_token_file)
// is refused with an error that names credential_process as the way to
// use it: `aws configure export-credentials --profile NAME --format
// process` gets such a profile's keys through the CLI. The metadata
// services of EC2 and ECS are not asked.
package awsauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/trussdev/truss/internal/hostfs"
)

// ErrNoCredentials is returned (wrapped) by Resolve when the chain finds
// no credentials.
var ErrNoCredentials = errors.New("no AWS credentials")

// Resolved is what the chain found.
type Resolved struct {
	// Region is the region, "" when none is set.
	Region string
	// BearerToken is a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK); when
	// set, Credentials is nil.
	BearerToken string
	// Credentials gives the keys to sign with (cached: a
	// credential_process runs again only when its keys expire).
	Credentials aws.CredentialsProvider
	// Source says where the credentials come from, for messages:
	// "AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID",
	// "profile dev in /home/u/.aws/config (credential_process)".
	Source string
}

// Files are the shared files' paths for the environment and home
// directory: the credentials file's and the config file's.
func Files(getenv func(string) string, home string) (credentials, config string) {
	credentials, config = getenv("AWS_SHARED_CREDENTIALS_FILE"), getenv("AWS_CONFIG_FILE")
	if credentials == "" && home != "" {
		credentials = filepath.Join(home, ".aws", "credentials")
	}
	if config == "" && home != "" {
		config = filepath.Join(home, ".aws", "config")
	}
	return credentials, config
}

// Resolve runs the chain on the environment getenv reads, with home as
// the home directory ("" when there is none). A missing shared file is
// no error; a malformed one, a profile that is named but in neither file,
// one whose credentials need AWS's services, or half a pair of keys is.
// No credential_process runs here: its command runs at the first
// Retrieve.
func Resolve(getenv func(string) string, home string) (*Resolved, error) {
	credFile, confFile := Files(getenv, home)
	profile := getenv("AWS_PROFILE")
	named := profile != ""
	if !named {
		profile = "default"
	}
	creds, err := readINI(credFile)
	if err != nil {
		return nil, err
	}
	conf, err := readINI(confFile)
	if err != nil {
		return nil, err
	}
	credSec := creds[profile]
	confSec := conf["profile "+profile]
	if profile == "default" && confSec == nil {
		confSec = conf["default"]
	}
	r := &Resolved{Region: firstOf(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"), confSec["region"])}

	if tok := getenv("AWS_BEARER_TOKEN_BEDROCK"); tok != "" {
		r.BearerToken, r.Source = tok, "AWS_BEARER_TOKEN_BEDROCK"
		return r, nil
	}
	id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	switch {
	case id != "" && secret != "":
		r.Credentials = static(aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: getenv("AWS_SESSION_TOKEN"), Source: "environment"})
		r.Source = "AWS_ACCESS_KEY_ID"
		return r, nil
	case id != "":
		return nil, errors.New("AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY")
	case secret != "":
		return nil, errors.New("AWS_SECRET_ACCESS_KEY is set without AWS_ACCESS_KEY_ID")
	}

	if credSec == nil && confSec == nil {
		if named {
			return nil, fmt.Errorf("profile %s (AWS_PROFILE) is in neither %s nor %s", profile, credFile, confFile)
		}
		return nil, fmt.Errorf("%w: set AWS_BEARER_TOKEN_BEDROCK, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in %s or %s", ErrNoCredentials, credFile, confFile)
	}
	// A key of the profile: the credentials file's first, as the SDKs
	// read them.
	get := func(k string) (string, string) {
		if v := credSec[k]; v != "" {
			return v, credFile
		}
		return confSec[k], confFile
	}
	where := func(file string) string { return "profile " + profile + " in " + file }
	for _, k := range []string{"role_arn", "sso_session", "sso_start_url", "web_identity_token_file"} {
		if v, file := get(k); v != "" {
			return nil, fmt.Errorf("%s uses %s, whose keys come from AWS's services, which Truss does not call: add credential_process = aws configure export-credentials --profile %s --format process to the profile and Truss runs the AWS CLI for them", where(file), k, profile)
		}
	}
	id, idFile := get("aws_access_key_id")
	secret, _ = get("aws_secret_access_key")
	if id != "" || secret != "" {
		if id == "" || secret == "" {
			return nil, fmt.Errorf("%s has only half of aws_access_key_id and aws_secret_access_key", where(idFile))
		}
		tok, _ := get("aws_session_token")
		r.Credentials = static(aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: tok, Source: "shared file"})
		r.Source = where(idFile)
		return r, nil
	}
	if cmd, file := get("credential_process"); cmd != "" {
		r.Credentials = aws.NewCredentialsCache(&Process{Command: cmd, Path: getenv("PATH")}, func(o *aws.CredentialsCacheOptions) {
			o.ExpiryWindow = time.Minute
		})
		r.Source = where(file) + " (credential_process)"
		return r, nil
	}
	file := confFile
	if credSec != nil {
		file = credFile
	}
	return nil, fmt.Errorf("%w: %s has neither aws_access_key_id nor credential_process", ErrNoCredentials, where(file))
}

// readINI reads a shared file; a missing one is empty.
func readINI(path string) (INI, error) {
	if path == "" {
		return INI{}, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return INI{}, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := ParseINI(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// static gives the same keys every time.
func static(c aws.Credentials) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return c, nil })
}

// ProcessTimeout is how long a credential_process may run.
const ProcessTimeout = time.Minute

// Process runs a credential_process command for keys. Its Retrieve runs
// the command every time; Resolve wraps it in aws.CredentialsCache, which
// keeps the keys until a minute before their Expiration.
type Process struct {
	// Command is the profile's credential_process, run by the shell (sh
	// -c; cmd /C on Windows) as the AWS CLI runs it.
	Command string
	// Path is the PATH the shell is found in and the command runs with
	// (Resolve's getenv("PATH"), which a session gives without the
	// directories its commands write); "" is hostfs.UserPath().
	Path string
}

// ProcessError is a credential_process that failed or printed no keys.
type ProcessError struct {
	Command string
	Err     error
	// Stderr is the end of what the command wrote to its standard error.
	Stderr string
}

func (e *ProcessError) Error() string {
	msg := fmt.Sprintf("credential_process %q: %v", e.Command, e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *ProcessError) Unwrap() error { return e.Err }

// Retrieve implements aws.CredentialsProvider.
func (p *Process) Retrieve(ctx context.Context) (aws.Credentials, error) {
	ctx, cancel := context.WithTimeout(ctx, ProcessTimeout)
	defer cancel()
	path := p.Path
	if path == "" {
		path = hostfs.UserPath()
	}
	shell, args := "sh", []string{"-c", p.Command}
	if runtime.GOOS == "windows" {
		shell, args = "cmd.exe", []string{"/C", p.Command}
	}
	exe, err := hostfs.LookPath(shell, path)
	if err != nil {
		return aws.Credentials{}, &ProcessError{Command: p.Command, Err: err}
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }), "PATH="+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return aws.Credentials{}, &ProcessError{Command: p.Command, Err: err, Stderr: stderrTail(stderr.String())}
	}
	c, err := ParseProcessOutput(stdout.Bytes())
	if err != nil {
		return aws.Credentials{}, &ProcessError{Command: p.Command, Err: err}
	}
	return c, nil
}

// stderrTail is what an error shows of a failed credential_process's
// standard error: its last line that says anything, cut to 200 bytes,
// with every word that may be a credential masked ("***"): a word after
// one that names a credential ("token SECRET-abc123", "key=…"), and a long
// word of letters and digits. A credential helper's message may quote
// the token it could not refresh.
func stderrTail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	var out []string
	after := false
	for _, w := range strings.Fields(line) {
		lower := strings.ToLower(w)
		name, value, isPair := strings.Cut(w, "=")
		switch {
		case isPair && credentialWord(strings.ToLower(name)) && value != "":
			w = name + "=***"
		case after && (strings.ContainsAny(w, "0123456789") || len(w) >= 16) || longToken(w):
			w = "***"
		}
		after = credentialWord(strings.Trim(lower, ":\"'"))
		out = append(out, w)
	}
	line = strings.Join(out, " ")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return line
}

// credentialWord reports whether a word names a credential, so that the
// next may be one.
func credentialWord(w string) bool {
	for _, k := range []string{"token", "secret", "password", "key", "credential"} {
		if strings.Contains(w, k) {
			return true
		}
	}
	return false
}

// longToken reports whether w looks like a key or a token: 20 or more
// characters, only letters, digits and -_./+=, with both letters and
// digits.
func longToken(w string) bool {
	w = strings.Trim(w, ".,;:\"'()[]")
	if len(w) < 20 {
		return false
	}
	letters, digits := false, false
	for _, c := range w {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters = true
		case c >= '0' && c <= '9':
			digits = true
		case strings.ContainsRune("-_./+=", c):
		default:
			return false
		}
	}
	return letters && digits
}

// ParseProcessOutput reads what a credential_process prints:
// {"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken",
// "Expiration" (RFC 3339; absent for keys that do not expire)}.
func ParseProcessOutput(b []byte) (aws.Credentials, error) {
	var out struct {
		Version         int
		AccessKeyID     string `json:"AccessKeyId"`
		SecretAccessKey string
		SessionToken    string
		Expiration      *time.Time
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return aws.Credentials{}, fmt.Errorf("its output is not the JSON of credentials: %w", err)
	}
	if out.Version != 1 {
		return aws.Credentials{}, fmt.Errorf("its output's Version is %d, not 1", out.Version)
	}
	if out.AccessKeyID == "" || out.SecretAccessKey == "" {
		return aws.Credentials{}, errors.New("its output lacks AccessKeyId or SecretAccessKey")
	}
	c := aws.Credentials{AccessKeyID: out.AccessKeyID, SecretAccessKey: out.SecretAccessKey, SessionToken: out.SessionToken, Source: "credential_process"}
	if out.Expiration != nil {
		c.CanExpire, c.Expires = true, out.Expiration.UTC()
	}
	return c, nil
}
