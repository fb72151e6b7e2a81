package queue

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// authenticator admits the clients of an embedded server: the process's
// own key with every right, and the token, the user and the NKeys of an
// Auth with perms (nil: every right). It replaces the server's own
// checks, which give a token or a user and password every right.
type authenticator struct {
	internal string // the public key only this process holds the seed of
	token    []byte
	user     string
	password []byte
	nkeys    map[string]bool
	perms    *server.Permissions
}

func newAuthenticator(a Auth, internal nkeys.KeyPair, perms *server.Permissions) (*authenticator, error) {
	pub, err := internal.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("queue: internal NKey: %w", err)
	}
	au := &authenticator{internal: pub, user: a.User, perms: perms, nkeys: map[string]bool{}}
	if a.Token != "" {
		au.token = []byte(a.Token)
	}
	if a.User != "" {
		au.password = []byte(a.Password)
	}
	for _, k := range a.NKeys {
		au.nkeys[k] = true
	}
	return au, nil
}

// Check implements server.Authentication. A client presenting an NKey is
// judged by it alone (a signature of the server's nonce); otherwise by
// its token, else by its user and password.
func (a *authenticator) Check(c server.ClientAuthentication) bool {
	if c.Kind() != server.CLIENT {
		return false
	}
	o := c.GetOpts()
	switch {
	case o.Nkey != "":
		if o.Nkey != a.internal && !a.nkeys[o.Nkey] {
			return false
		}
		if !signedNonce(o.Nkey, o.Sig, c.GetNonce()) {
			return false
		}
		if o.Nkey == a.internal {
			c.RegisterUser(&server.User{Username: "truss (this process)"})
			return true
		}
		c.RegisterUser(&server.User{Username: o.Nkey, Permissions: a.perms})
		return true
	case o.Token != "":
		if a.token == nil || subtle.ConstantTimeCompare([]byte(o.Token), a.token) != 1 {
			return false
		}
		c.RegisterUser(&server.User{Username: "token", Permissions: a.perms})
		return true
	case o.Username != "":
		if a.user == "" || o.Username != a.user || subtle.ConstantTimeCompare([]byte(o.Password), a.password) != 1 {
			return false
		}
		c.RegisterUser(&server.User{Username: o.Username, Permissions: a.perms})
		return true
	}
	return false
}

// signedNonce reports whether sig (base64, URL or standard alphabet, as
// NATS clients send it) is pub's signature of nonce.
func signedNonce(pub, sig string, nonce []byte) bool {
	if sig == "" || len(nonce) == 0 {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		if raw, err = base64.StdEncoding.DecodeString(sig); err != nil {
			return false
		}
	}
	kp, err := nkeys.FromPublicKey(pub)
	if err != nil {
		return false
	}
	return kp.Verify(nonce, raw) == nil
}
