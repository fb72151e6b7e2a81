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
