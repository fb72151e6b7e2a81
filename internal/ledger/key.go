package ledger

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/hostfs"
)

// KeyDir returns the directory of the installation's ledger key:
// $TRUSS_HOME, else $XDG_CONFIG_HOME/truss, else ~/.config/truss.
func KeyDir() (string, error) {
	if h := os.Getenv("TRUSS_HOME"); h != "" {
		return h, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no key directory: set TRUSS_HOME: %w", err)
	}
	return filepath.Join(d, "truss"), nil
}

// ErrKeyMissing is the error of LoadOrCreateKey when the signing key is
// gone but its verifier key is still there: a key existed, and making a
// new one silently would sign later ledgers with a key no one expects.
var ErrKeyMissing = errors.New("the ledger signing key is missing")

// LoadOrCreateKey returns the signer and verifier key stored in dir,
// generating them (files 0600 and 0644) on first use. The key name is
// "truss/<host>". The key file must be a regular file (a link is
// refused), owned by this user, readable by no one else; a missing key
// whose verifier key remains is ErrKeyMissing, never a new key.
func LoadOrCreateKey(dir string) (note.Signer, string, error) {
	skPath, vkPath := filepath.Join(dir, "ledger.key"), filepath.Join(dir, "ledger.vkey")
	sk, err := readKeyFile(skPath)
	if errors.Is(err, fs.ErrNotExist) {
		if _, verr := os.Lstat(vkPath); verr == nil {
			return nil, "", fmt.Errorf("%w: %s is not there, but its verifier key %s is: restore the key, or remove %s to start a new one (ledgers signed before stay verifiable with --key and the old verifier key)",
				ErrKeyMissing, skPath, vkPath, vkPath)
		}
		host, _ := os.Hostname()
		host = strings.Map(func(r rune) rune {
			if r == '+' || r <= ' ' {
				return '-'
			}
			return r
		}, host)
		if host == "" {
			host = "local"
		}
		skey, vkey, err := note.GenerateKey(rand.Reader, "truss/"+host)
		if err != nil {
			return nil, "", fmt.Errorf("generate the ledger key: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, "", fmt.Errorf("ledger key: %w", err)
		}
		// O_EXCL: two processes racing to create the key keep the first.
		f, err := os.OpenFile(skPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			_, err = f.WriteString(skey + "\n")
			if serr := f.Sync(); err == nil {
				err = serr
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = hostfs.WriteFileAtomic(vkPath, []byte(vkey+"\n"), 0o644)
			}
			if err != nil {
				return nil, "", fmt.Errorf("ledger key: %w", err)
			}
		} else if !errors.Is(err, fs.ErrExist) {
			return nil, "", fmt.Errorf("ledger key: %w", err)
		}
		return LoadOrCreateKey(dir)
	}
	if err != nil {
		return nil, "", fmt.Errorf("ledger key: %w", err)
	}
	signer, err := note.NewSigner(strings.TrimSpace(string(sk)))
	if err != nil {
		return nil, "", fmt.Errorf("ledger key %s: %w", skPath, err)
	}
	vk, err := hostfs.ReadFile(vkPath, 4<<10)
	if err != nil {
		return nil, "", fmt.Errorf("ledger verifier key: %w", err)
	}
	return signer, strings.TrimSpace(string(vk)), nil
}

// readKeyFile reads the signing key at path: a regular file, not a link,
// owned by this process's user and with no permission for anyone else.
func readKeyFile(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s); Truss reads its signing key from no link or device", path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s belongs to user %d, not to this user (%d)", path, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %v; a signing key must be readable by its owner only (chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	return hostfs.ReadFile(path, 4<<10)
}

// InstallationKey loads (or creates) the key of this installation, in
// KeyDir: the signer and the verifier key's text.
func InstallationKey() (note.Signer, string, error) {
	dir, err := KeyDir()
	if err != nil {
		return nil, "", err
	}
	return LoadOrCreateKey(dir)
}
