package service

import "testing"

// TestPresentedKey: X-API-Key wins; else a bearer token, the scheme in any
// case, spaces around the token trimmed; anything else presents no key.
func TestPresentedKey(t *testing.T) {
	for _, tt := range []struct{ xAPIKey, authorization, want string }{
		{"k1", "", "k1"},
		{"k1", "Bearer k2", "k1"},
		{"", "Bearer k2", "k2"},
		{"", "bearer  k2 ", "k2"},
		{"", "BEARER k2", "k2"},
		{"", "Basic dXNlcjpwdw==", ""},
		{"", "Bearer ", ""},
		{"", "Bearerk2", ""},
		{"", "", ""},
	} {
		if got := PresentedKey(tt.xAPIKey, tt.authorization); got != tt.want {
			t.Errorf("PresentedKey(%q, %q) = %q, want %q", tt.xAPIKey, tt.authorization, got, tt.want)
		}
	}
}
