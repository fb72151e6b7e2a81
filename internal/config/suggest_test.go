package config

import (
	"strings"
	"testing"
)

// TestSettingTypos: a misspelt setting of the user's file is met with the
// one it likely meant, a misspelt env_key is no pasted key, and a setting
// nothing is near is unknown as before.
func TestSettingTypos(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"baseurl", "[providers.x]\nbaseurl = \"http://h/v1\"\nwire = \"chat\"\n", `unknown setting "providers.x.baseurl"; did you mean providers.x.base_url?`},
		{"envkey", "[providers.x]\nbase_url = \"http://h/v1\"\nwire = \"chat\"\nenvkey = \"X_KEY\"\n", `unknown setting "providers.x.envkey"; did you mean providers.x.env_key?`},
		{"provider", "[provider.x]\nbase_url = \"http://h/v1\"\n", `did you mean providers.x`},
		{"far", "[providers.x]\nbase_url = \"http://h/v1\"\nwire = \"chat\"\nflavour = \"x\"\n", `unknown setting "providers.x.flavour"`},
		{"a pasted key", "[providers.x]\nbase_url = \"http://h/v1\"\nwire = \"chat\"\napi_key = \"sk-123\"\n", "providers.x.api_key: a key's value does not belong in a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseUser("/home/u/.config/truss/config.toml", []byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one holding %q", err, tc.want)
			}
			if tc.name == "far" && strings.Contains(err.Error(), "did you mean") {
				t.Errorf("error %v suggests", err)
			}
		})
	}
}
