package ledger

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/note"
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

// LoadOrCreateKey returns the signer and verifier key stored in dir,
// generating them (files 0600) on first use. The key name is
// "truss/<host>".
func LoadOrCreateKey(dir string) (note.Signer, string, error) {
	skPath, vkPath := filepath.Join(dir, "ledger.key"), filepath.Join(dir, "ledger.vkey")
	sk, err := os.ReadFile(skPath)
	if errors.Is(err, fs.ErrNotExist) {
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
		f, err := os.OpenFile(skPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			_, err = f.WriteString(skey + "\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.WriteFile(vkPath, []byte(vkey+"\n"), 0o644)
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
	vk, err := os.ReadFile(vkPath)
	if err != nil {
		return nil, "", fmt.Errorf("ledger verifier key: %w", err)
	}
	return signer, strings.TrimSpace(string(vk)), nil
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
