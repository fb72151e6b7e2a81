package shell

import "strings"

// tokenFormat is a kind of credential recognizable by its form: a fixed
// prefix, then at least min characters of its alphabet.
type tokenFormat struct {
	prefix string
	chars  func(byte) bool
	min    int
}

func alnum(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
func upperNum(c byte) bool {
	return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
func hexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
func urlSafe(c byte) bool   { return alnum(c) || c == '-' || c == '_' }
func base64ish(c byte) bool { return urlSafe(c) || c == '+' || c == '/' || c == '=' }

// tokenFormats are the credentials recognized by their form, whatever the
// variable is called: API keys and access tokens of the services a
// developer's environment holds (their published formats, as secret
// scanners such as GitHub's and gitleaks match them). The alphabets and
// lengths keep ordinary values out: "sk-learn", a path, a git object
// name, a UUID.
var tokenFormats = []tokenFormat{
	{"sk-ant-", urlSafe, 32},     // Anthropic
	{"sk-proj-", urlSafe, 32},    // OpenAI project keys
	{"sk-svcacct-", urlSafe, 32}, // OpenAI service accounts
	{"sk-admin-", urlSafe, 32},   // OpenAI admin keys
	{"sk-or-", urlSafe, 32},      // OpenRouter
	{"sk-", alnum, 32},           // OpenAI's older keys, DeepSeek and others
	{"sk_live_", alnum, 20},      // Stripe
	{"sk_test_", alnum, 20},
	{"rk_live_", alnum, 20},
	{"rk_test_", alnum, 20},
	{"whsec_", alnum, 24},
	{"ghp_", alnum, 36}, // GitHub
	{"gho_", alnum, 36},
	{"ghu_", alnum, 36},
	{"ghs_", alnum, 36},
	{"ghr_", alnum, 36},
	{"github_pat_", urlSafe, 40},
	{"glpat-", urlSafe, 20}, // GitLab
	{"glrt-", urlSafe, 20},
	{"gldt-", urlSafe, 20},
	{"glptt-", urlSafe, 20},
	{"hf_", alnum, 30},     // Hugging Face
	{"xoxb-", urlSafe, 20}, // Slack
	{"xoxp-", urlSafe, 20},
	{"xoxa-", urlSafe, 20},
	{"xoxr-", urlSafe, 20},
	{"xoxs-", urlSafe, 20},
	{"xapp-", urlSafe, 20},
	{"AKIA", upperNum, 16}, // AWS access key ids
	{"ASIA", upperNum, 16},
	{"AIza", urlSafe, 35},    // Google API keys
	{"ya29.", urlSafe, 20},   // Google OAuth access tokens
	{"GOCSPX-", urlSafe, 20}, // Google OAuth client secrets
	{"shpat_", hexDigit, 32}, // Shopify
	{"shpss_", hexDigit, 32},
	{"shpca_", hexDigit, 32},
	{"shppa_", hexDigit, 32},
	{"dapi", hexDigit, 32},    // Databricks
	{"dop_v1_", hexDigit, 64}, // DigitalOcean
	{"doo_v1_", hexDigit, 64},
	{"pypi-AgE", urlSafe, 40}, // PyPI
	{"npm_", alnum, 36},       // npm
	{"gsk_", alnum, 40},       // Groq
	{"xai-", alnum, 40},       // xAI
	{"r8_", alnum, 30},        // Replicate
	{"pplx-", alnum, 40},      // Perplexity
	{"lin_api_", alnum, 30},   // Linear
	{"ntn_", alnum, 30},       // Notion
	{"secret_", alnum, 40},    // Notion's older tokens
	{"SG.", urlSafe, 60},      // SendGrid: SG.<22>.<43>, the dot counted below
	{"sq0atp-", urlSafe, 20},  // Square
	{"sq0csp-", urlSafe, 40},
	{"AGE-SECRET-KEY-1", upperNum, 50}, // age identities
	{"SK", hexDigit, 32},               // Twilio API keys
	{"key-", hexDigit, 32},             // Mailgun
	{"DO00", upperNum, 60},             // DigitalOcean Spaces
	{"HRKU-", urlSafe, 30},             // Heroku
	{"ATATT", urlSafe, 60},             // Atlassian API tokens
	{"hooks.slack.com/services/", func(c byte) bool { return urlSafe(c) || c == '/' }, 30},
	{"discord.com/api/webhooks/", func(c byte) bool { return urlSafe(c) || c == '/' }, 40},
	{"discordapp.com/api/webhooks/", func(c byte) bool { return urlSafe(c) || c == '/' }, 40},
	{"Basic ", base64ish, 12}, // an Authorization header's user:password
	{"eyJ", urlSafe, 0},       // a JWT: checked for its form below
}

// secretForm reports whether v holds a credential recognizable by its
// form (tokenFormats), anywhere in it ("Bearer ghp_…", a URL's query), a
// private key in PEM or PGP armor, or an Azure connection string's or
// shared access signature's key.
func secretForm(v string) bool {
	if strings.Contains(v, "PRIVATE KEY") && strings.Contains(v, "-----BEGIN ") || telegramToken(v) {
		return true
	}
	for _, k := range [...]string{"AccountKey=", "SharedAccessKey=", "SharedAccessSignature=", "sig="} {
		if i := strings.Index(v, k); i >= 0 && (k != "sig=" || strings.Contains(v, "sv=") && strings.Contains(v, "se=")) {
			if runOf(v[i+len(k):], base64ish) >= 20 || strings.Contains(v[i+len(k):], "%") {
				return true
			}
		}
	}
	for _, f := range tokenFormats {
		for i := 0; ; {
			j := strings.Index(v[i:], f.prefix)
			if j < 0 {
				break
			}
			at := i + j
			i = at + len(f.prefix)
			if at > 0 && urlSafe(v[at-1]) {
				continue // inside a longer word
			}
			rest := v[i:]
			n := runOf(rest, f.chars)
			switch f.prefix {
			case "eyJ":
				// header.payload.signature, the payload a JSON object too.
				if !jwt(v[at:]) {
					continue
				}
				return true
			case "SG.":
				n = runOf(rest, func(c byte) bool { return urlSafe(c) || c == '.' })
			}
			if n >= f.min {
				return true
			}
		}
	}
	return false
}

// telegramToken reports whether v holds a Telegram bot token: the bot's
// id (8 to 10 digits), a colon, and 35 characters of base64url.
func telegramToken(v string) bool {
	for i := 0; ; {
		j := strings.IndexByte(v[i:], ':')
		if j < 0 {
			return false
		}
		at := i + j
		i = at + 1
		d := 0
		for d < at && '0' <= v[at-1-d] && v[at-1-d] <= '9' {
			d++
		}
		if d >= 8 && d <= 10 && (at-d == 0 || !urlSafe(v[at-d-1])) && runOf(v[i:], urlSafe) == 35 {
			return true
		}
	}
}

// runOf is how many of s's first bytes are in the alphabet.
func runOf(s string, chars func(byte) bool) int {
	n := 0
	for n < len(s) && chars(s[n]) {
		n++
	}
	return n
}

// jwt reports whether s begins with a JSON Web Token: three base64url
// parts, the second also a JSON object ("eyJ").
func jwt(s string) bool {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 3 || !strings.HasPrefix(parts[1], "eyJ") {
		return false
	}
	return runOf(parts[0], urlSafe) == len(parts[0]) && runOf(parts[1], urlSafe) == len(parts[1]) && runOf(parts[2], urlSafe) >= 16
}

// urlPassword reports whether v holds a URL with a password: a scheme,
// "://", a user (perhaps empty), ":", a password and "@", found by the
// text rather than by a URL parser, so that a password a parser would
// cut short or refuse ("pa#ss", "s3cr%t", "Gu3st/pw", "pa ss") still
// counts, and every URL of v is looked at (a list of index URLs). A port
// is no password: "localhost:8080/@vite" and "h:8443/x?mail=a@b" pass.
func urlPassword(v string) bool {
	for i := 0; ; {
		j := strings.Index(v[i:], "://")
		if j < 0 {
			return false
		}
		at := i + j
		i = at + 3
		s := at
		for s > 0 && schemeChar(v[s-1]) {
			s--
		}
		for s < at && !letter(v[s]) {
			s++
		}
		if s < at && credentials(v[i:], true) {
			return true
		}
	}
}

// credentials reports whether s begins with user:password@ (the user
// empty only if emptyUser), the password neither a port nor part of
// another URL.
func credentials(s string, emptyUser bool) bool {
	u := runOf(s, userChar)
	if u == len(s) || s[u] != ':' || u == 0 && !emptyUser {
		return false
	}
	rest := s[u+1:]
	if k := strings.Index(rest, "://"); k >= 0 {
		rest = rest[:k] // another URL's: a password holds no "://"
	}
	pw, _, ok := strings.Cut(rest, "@")
	return ok && !port(pw)
}

// port reports whether what follows a host's colon, up to an "@" further
// on, is a port and the rest of the URL rather than a password: up to
// five digits ending the URL's authority, where the "@" is then in a
// path that goes on ("/@vite/client", "/api/x@y") or in a query or
// fragment.
func port(pw string) bool {
	d := 0
	for d < len(pw) && d < 5 && '0' <= pw[d] && pw[d] <= '9' {
		d++
	}
	if d == 0 || d == len(pw) {
		return false
	}
	switch pw[d] {
	case '?', '#', ' ', '\t', '\n', '\r', ',', ';':
		return true
	case '/':
		tail := pw[d+1:]
		return tail == "" || strings.ContainsAny(tail, "/?#=")
	}
	return false
}

// bareCredentials reports whether a word of v (v split on white space,
// commas and semicolons) is user:password@host without a scheme
// (HTTP_PROXY=u:p@proxy:3128). A container image's digest
// (nginx:1.25@sha256:…), a path (/opt/node@18/bin:/bin), an address
// with a scheme of no "//" (mailto:me@example.com) and a host's port
// are no credentials.
func bareCredentials(v string) bool {
	for _, w := range strings.FieldsFunc(v, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == ',' || r == ';'
	}) {
		if strings.Contains(w, "://") {
			continue
		}
		left, host, ok := strings.Cut(w, "@")
		if !ok || host == "" || !(alnum(host[0]) || host[0] == '[') || digest(host) {
			continue
		}
		if k := strings.LastIndexAny(left, `="'(<`); k >= 0 {
			left = left[k+1:]
		}
		user, _, _ := strings.Cut(left, ":")
		switch strings.ToLower(user) {
		case "mailto", "sip", "sips", "xmpp", "tel", "im", "pres", "acct", "urn":
			continue
		}
		if credentials(left+"@", false) && !strings.HasPrefix(left[len(user)+1:], "/") && len(left) > len(user)+1 {
			return true
		}
	}
	return false
}

// digest reports whether s begins with a content digest: an algorithm,
// ":" and at least 32 hexadecimal digits (sha256:9f86…).
func digest(s string) bool {
	alg, rest, ok := strings.Cut(s, ":")
	return ok && alg != "" && runOf(alg, alnum) == len(alg) && runOf(rest, hexDigit) >= 32
}

// secretParam reports whether v sets a secret-named key anywhere in it:
// every "key=value" and "key: value" of a URL's query or fragment, a
// connection string, a list of options or a JSON object (?token=…,
// &sig=…, #access_token=…, Password = p;, password=p dbname=x,
// "password": "p"), the key starting v or after one of ?&;,#{ white
// space or a quote, white space allowed around the separator, the value
// not empty. secretKey says which keys are secret.
func secretParam(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] != '=' && v[i] != ':' || v[i] == ':' && strings.HasPrefix(v[i+1:], "//") {
			continue
		}
		j := i + 1
		for j < len(v) && (v[j] == ' ' || v[j] == '\t') {
			j++
		}
		if j < len(v) && (v[j] == '"' || v[j] == '\'') {
			j++
		}
		if j == len(v) || strings.IndexByte("&;,\"'}\n\r", v[j]) >= 0 {
			continue
		}
		e := i
		for e > 0 && (v[e-1] == ' ' || v[e-1] == '\t') {
			e--
		}
		if e > 0 && (v[e-1] == '"' || v[e-1] == '\'') {
			e--
		}
		s := e
		for s > 0 && keyChar(v[s-1]) {
			s--
		}
		if s == e || s > 0 && strings.IndexByte("?&;,#{ \t\n\r\"'", v[s-1]) < 0 {
			continue
		}
		if secretKey(v[s:e]) {
			return true
		}
	}
	return false
}

// secretKey reports whether a parameter's key names a secret. Its words
// are its parts between characters that are not letters or digits, in
// any case. A secret's key has a word SECRET, SIGNATURE, AUTH,
// AUTHORIZATION, PASS, PASSCODE, PASSPHRASE, CRED, CREDS, CREDENTIAL(S),
// BEARER or JWT, a word that spells PASSWORD (passwordLike: PWD, PW,
// PASSWD) or ends in PASSWORD, PASSWD or SECRET (dbpassword,
// clientsecret), or a last word KEY, TOKEN or SIG or one ending in
// TOKEN, APIKEY, ACCESSKEY or SECRETKEY (api_key, accesstoken,
// next_token); KEY or TOKEN before another word names something else
// (key_file, sort-key-order, token_type). "monkey" and "keyboard" are no
// secrets.
func secretKey(k string) bool {
	words := strings.FieldsFunc(strings.ToUpper(k), func(r rune) bool {
		return !('A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
	for i, w := range words {
		switch w {
		case "SECRET", "SIGNATURE", "AUTH", "AUTHORIZATION", "PASS", "PASSCODE", "PASSPHRASE",
			"CRED", "CREDS", "CREDENTIAL", "CREDENTIALS", "BEARER", "JWT":
			return true
		}
		if passwordLike(w) {
			return true
		}
		for _, suf := range [...]string{"PASSWORD", "PASSWD", "SECRET"} {
			if strings.HasSuffix(w, suf) {
				return true
			}
		}
		if i < len(words)-1 {
			continue
		}
		switch w {
		case "KEY", "TOKEN", "SIG":
			return true
		}
		for _, suf := range [...]string{"TOKEN", "APIKEY", "ACCESSKEY", "SECRETKEY"} {
			if strings.HasSuffix(w, suf) {
				return true
			}
		}
	}
	return false
}

// passwordLike reports whether the upper-case word w spells PASSWORD
// short or misspelt: PW, PSW, PASSW, or letters that, in order, are some
// of PASSWORD's, starting with P, with a W, ending in D (PWD, PSWD,
// PWRD, PASSWD, PASSWRD, PASWORD, PASSWORD).
func passwordLike(w string) bool {
	switch w {
	case "PW", "PSW", "PASSW":
		return true
	}
	if len(w) < 3 || len(w) > len("PASSWORD") || w[0] != 'P' || w[len(w)-1] != 'D' || !strings.Contains(w, "W") {
		return false
	}
	const p = "PASSWORD"
	j := 0
	for i := 0; i < len(w); i++ {
		for j < len(p) && p[j] != w[i] {
			j++
		}
		if j == len(p) {
			return false
		}
		j++
	}
	return true
}

// passwordSuffix reports whether the upper-case word w ends in a word
// passwordLike takes of three letters or more (ADMINPASSWRD, ROOTPWD),
// OLDPWD (the previous working directory) excepted.
func passwordSuffix(w string) bool {
	if w == "OLDPWD" {
		return false
	}
	for k := max(0, len(w)-len("PASSWORD")); k+3 <= len(w); k++ {
		if w[k] == 'P' && passwordLike(w[k:]) {
			return true
		}
	}
	return false
}

func letter(c byte) bool     { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func schemeChar(c byte) bool { return alnum(c) || c == '+' || c == '-' || c == '.' }
func keyChar(c byte) bool    { return alnum(c) || c == '_' || c == '-' || c == '.' }

// userChar is a byte a URL's user may hold as the text writes it: not
// white space, a control character, or a delimiter of the URL's
// authority.
func userChar(c byte) bool {
	return c > ' ' && c != 0x7f && strings.IndexByte("/?#@:[]\"'<>\\", c) < 0
}
