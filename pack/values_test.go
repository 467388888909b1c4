package pack

import (
	"fmt"
	"strings"
	"testing"
)

// TestClaimValues: the values a clause states, with their kinds (counts
// show as n:… or #…), old (after not / no longer / instead of) and new
// (after the clause's change cue).
func TestClaimValues(t *testing.T) {
	tests := []struct {
		in   string
		want string // "kind value text [old] [new]" per value, "; " between, "|" between clauses
	}{
		{"The offsite budget is $15,500.", `$ 15500 "$15,500"`},
		{"The facilitator charges $95 per hour.", `$/h 95 "$95 per hour"`},
		{"Rent is $1,800 a month.", `$/month 1800 "$1,800 a month"`},
		{"The room is €120/night.", `€/day 120 "€120/night"`},
		{"The design sync is at 10:00.", `time 600 "10:00"`},
		{"Gym at 6:00 pm, yoga at 7 am, lunch at noon.", `time 1080 "6:00 pm"; time 420 "7 am"; time 720 "noon"`},
		{"Call at 3pm.", `time 900 "3pm"`},
		{"The launch is pushed to December 4.", `date 1204 "December 4" new`},
		{"Due 4 March, paid on the 28th.", `date 304 "4 March"; date 28 "28th"`},
		{"Renewal on 2026-01-31.", `date 2.0260131e+07 "2026-01-31"`},
		{"Standup is on Tuesdays.", `weekday 2 "Tuesdays"`},
		{"In 2022 the team had 6 engineers.", `year 2022 "2022"; n:engineer 6 "6"`},
		{"The train leaves from platform 4.", `#platform 4 "4"`},
		{"Refunds within 30 or 45 days.", `day 30 "30"; day 45 "45 days"`},
		{"The design sync is no longer 10:00, it moved to 14:30.", `time 600 "10:00" old; time 870 "14:30" new`},
		{"It is 11:00 now instead of 10:00.", `time 660 "11:00"; time 600 "10:00" old`},
		{"My phone is 555-0142.", ``},
		{"Version 4.2 ships.", ``},
		{"What time is it? It is 9:30.", `|time 570 "9:30"`},
	}
	for _, tt := range tests {
		var clauses []string
		for _, c := range featuresOf(tt.in).claims {
			var vs []string
			for _, v := range c.values {
				kind := v.kind
				if i := strings.IndexByte(kind, ':'); i > 0 && kind[:i] == "n" {
					kind = "n:" + map[string]string{countKind("engineers"): "engineer"}[kind]
				}
				if strings.HasPrefix(kind, "#") {
					kind = "#" + map[string]string{numberedKind("platform"): "platform"}[kind]
				}
				s := fmt.Sprintf("%s %v %q", kind, v.v, v.text)
				if v.old {
					s += " old"
				}
				if v.new {
					s += " new"
				}
				vs = append(vs, s)
			}
			clauses = append(clauses, strings.Join(vs, "; "))
		}
		got := strings.Join(clauses, "|")
		got = strings.Trim(got, "|")
		if want := strings.Trim(tt.want, "|"); got != want {
			t.Errorf("%q:\n got %s\nwant %s", tt.in, got, want)
		}
	}
}

// countKind is the kind of a count of word ("600 followers").
func countKind(word string) string {
	for _, v := range featuresOf("1 " + word + ".").current {
		return v.kind
	}
	return ""
}

// numberedKind is the kind of a number after word ("platform 7").
func numberedKind(word string) string {
	for _, v := range featuresOf(word + " 7.").current {
		return v.kind
	}
	return ""
}
