package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name, typ, payload, want string
	}{
		// chat_turn
		{"chat", "chat_turn", `{"role":"user","content":"How do I chunk text?"}`,
			"user: How do I chunk text?"},
		{"chat text alias", "chat_turn", `{"speaker":"assistant","text":"  Like this.\n"}`,
			"assistant: Like this."},
		{"chat without role", "chat_turn", `{"content":"no role"}`, "no role"},
		{"chat content parts", "chat_turn",
			`{"role":"user","content":[{"type":"text","text":"look at this"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}`,
			"user: look at this\nimage_url.url: https://x/y.png\ntype: image_url"},
		{"chat multiline", "chat_turn", `{"role":"user","content":"line one\nline two"}`,
			"user: line one\nline two"},
		{"chat role only is flattened", "chat_turn", `{"role":"user","ts":3}`, "role: user\nts: 3"},
		{"chat extra keys ignored", "chat_turn", `{"role":"user","content":"hi","meta":{"x":1}}`, "user: hi"},
		{"chat CJK and emoji", "chat_turn", `{"role":"user","content":"你好，世界 👋🏽 café"}`,
			"user: 你好，世界 👋🏽 café"},
		{"chat escaped unicode", "chat_turn", `{"role":"user","content":"\u00e9\ud83d\ude00"}`, "user: é😀"},

		// document
		{"document", "document", `{"title":"Design","content":"Loci stores memories."}`,
			"Title: Design\n\nLoci stores memories."},
		{"document body alias", "document", `{"name":"readme.md","body":"# Hi"}`, "Title: readme.md\n\n# Hi"},
		{"document title only", "document", `{"title":"Empty doc","content":""}`, "Title: Empty doc"},
		{"document content only", "document", `{"text":"just text"}`, "just text"},

		// note
		{"note", "note", `{"content":"buy milk","tags":["x"]}`, "buy milk"},
		{"note body alias", "note", `{"body":"call Ada"}`, "call Ada"},

		// email
		{"email", "email",
			`{"subject":"Lunch","from":"ada@example.com","to":["bob@example.com","eve@example.com"],"date":"2024-05-01T12:00:00Z","body":"Noon?"}`,
			"Subject: Lunch\nFrom: ada@example.com\nTo: bob@example.com, eve@example.com\nDate: 2024-05-01T12:00:00Z\n\nNoon?"},
		{"email person objects", "email",
			`{"subject":"Hi","from":{"name":"Ada Lovelace","email":"ada@example.com"},"to":[{"name":"Bob"},{"email":"eve@example.com"}],"text":"Hello"}`,
			"Subject: Hi\nFrom: Ada Lovelace <ada@example.com>\nTo: Bob, eve@example.com\n\nHello"},
		{"email missing fields", "email", `{"subject":"Only subject","to":[],"date":null}`, "Subject: Only subject"},

		// calendar_event
		{"calendar", "calendar_event",
			`{"title":"Sync","start":"2024-05-01T10:00","end":"2024-05-01T10:30","location":"Room 4","attendees":["Ada",{"name":"Bob","email":"bob@x.org"}],"description":"Weekly sync."}`,
			"Title: Sync\nStart: 2024-05-01T10:00\nEnd: 2024-05-01T10:30\nLocation: Room 4\nAttendees: Ada, Bob <bob@x.org>\n\nWeekly sync."},
		{"calendar google shape", "calendar_event",
			`{"summary":"Standup","start":{"dateTime":"2024-05-01T09:00:00+02:00","timeZone":"Europe/Paris"},"end":{"date":"2024-05-01"},"location":{"name":"HQ","floor":3}}`,
			"Title: Standup\nStart: 2024-05-01T09:00:00+02:00 (Europe/Paris)\nEnd: 2024-05-01\nLocation: floor: 3; name: HQ"},

		// meeting_transcript
		{"transcript string", "meeting_transcript", `{"title":"Retro","transcript":"Ada: hi\nBob: hello"}`,
			"Title: Retro\n\nAda: hi\nBob: hello"},
		{"transcript segments", "meeting_transcript",
			`{"title":"Retro","transcript":[{"speaker":"Ada","text":"We shipped.","start":0.5},{"speaker":"Bob","text":"Nice!"},"[silence]",{"text":"unattributed"}]}`,
			"Title: Retro\n\nAda: We shipped.\nBob: Nice!\n[silence]\nunattributed"},

		// tool_call
		{"tool call", "tool_call", `{"tool":"search","arguments":{"query":"go chunking","limit":10,"filters":{"lang":"en"}}}`,
			"Tool: search\n\nfilters.lang: en\nlimit: 10\nquery: go chunking"},
		{"tool call JSON string args", "tool_call", `{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"days\":3}"}`,
			"Tool: get_weather\n\ncity: Paris\ndays: 3"},
		{"tool call plain string args", "tool_call", `{"tool_name":"shell","input":"ls -la"}`, "Tool: shell\n\nls -la"},
		{"tool call openai shape", "tool_call",
			`{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"id\":42}"}}`,
			"Tool: lookup\n\nid: 42"},
		{"tool call no args", "tool_call", `{"tool":"now"}`, "Tool: now"},

		// tool_result
		{"tool result", "tool_result", `{"tool":"search","result":"3 hits"}`, "Tool: search\n\n3 hits"},
		{"tool result object", "tool_result", `{"tool_name":"weather","output":{"temp":21.5,"unit":"C"}}`,
			"Tool: weather\n\ntemp: 21.5\nunit: C"},
		{"tool result content parts", "tool_result", `{"name":"fetch","content":[{"type":"text","text":"page body"}]}`,
			"Tool: fetch\n\npage body"},
		{"tool result error", "tool_result", `{"tool":"fetch","error":"timeout after 5s"}`, "Tool: fetch\n\ntimeout after 5s"},

		// attachment
		{"attachment", "attachment",
			`{"filename":"report.pdf","media_type":"application/pdf","description":"Q1 report","text":"Revenue grew.","blob_pointer":"s3://bucket/key"}`,
			"Filename: report.pdf\nMedia type: application/pdf\nDescription: Q1 report\n\nRevenue grew."},
		{"attachment pointer only", "attachment", `{"blob_pointer":{"uri":"s3://b/k","size":10}}`, ""},
		{"attachment mime alias", "attachment", `{"name":"a.png","mimeType":"image/png","blob_pointer":"x"}`,
			"Filename: a.png\nMedia type: image/png"},

		// string payloads are their own text, untrimmed
		{"string payload", "note", `"  remember: 3.14\n"`, "  remember: 3.14\n"},
		{"string payload escapes", "chat_turn", `"tab\there \"quoted\" \u4f60\u597d"`, "tab\there \"quoted\" 你好"},

		// flattening
		{"unknown type", "custom", `{"b":2,"a":{"y":true,"x":null},"c":[1,"two",[3]]}`,
			"a.x: null\na.y: true\nb: 2\nc: 1\nc: two\nc: 3"},
		{"numbers as written", "note", `{"n":1.50,"e":1e3,"neg":-0,"big":12345678901234567890}`,
			"big: 12345678901234567890\ne: 1e3\nn: 1.50\nneg: -0"},
		{"no expected keys", "email", `{"headers":{"X-Id":"1"},"raw":"..."}`, "headers.X-Id: 1\nraw: ..."},
		{"array payload", "chat_turn", `[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]`,
			"content: a\nrole: user\ncontent: b\nrole: assistant"},
		{"array of scalars", "document", `[1, "x", false, null]`, "1\nx\nfalse\nnull"},
		{"scalar payloads", "note", `42`, "42"},
		{"null payload", "note", `null`, "null"},
		{"empty values skipped", "custom", `{"a":"","b":[],"c":{},"d":" ","e":"kept"}`, "e: kept"},
		{"blob_pointer skipped when flattening", "custom", `{"x":{"blob_pointer":"s3://k","name":"n"}}`, "x.name: n"},
		{"keys sorted bytewise", "custom", `{"é":1,"Z":2,"a":3,"_":4}`, "Z: 2\n_: 4\na: 3\né: 1"},
		{"duplicate keys last wins", "custom", `{"a":1,"a":2}`, "a: 2"},
		{"nested arrays of objects", "custom", `{"items":[{"n":"pen","q":2},{"n":"ink"}]}`,
			"items.n: pen\nitems.q: 2\nitems.n: ink"},
		{"surrounding white space", "note", " \n {\"content\":\"x\"} \t\n", "x"},
		{"CJK and emoji keys", "custom", `{"名前":"山田","emoji":"🎉"}`, "emoji: 🎉\n名前: 山田"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract(tt.typ, "", []byte(tt.payload))
			if err != nil {
				t.Fatalf("Extract(%q, %s): %v", tt.typ, tt.payload, err)
			}
			if got != tt.want {
				t.Errorf("Extract(%q, %s)\n got: %q\nwant: %q", tt.typ, tt.payload, got, tt.want)
			}
		})
	}
}

func TestExtractInvalid(t *testing.T) {
	for _, payload := range []string{
		``,
		`   `,
		`{`,
		`{"role":"user",}`,
		`{"a":1} {"b":2}`,
		`{"a":1} x`,
		`[1,2`,
		`'single'`,
		`{"a":NaN}`,
		`"unterminated`,
	} {
		if got, err := Extract("note", "", []byte(payload)); err == nil {
			t.Errorf("Extract(note, %q) = %q, want an error", payload, got)
		}
	}
}

func TestExtractInvalidUTF8(t *testing.T) {
	for _, payload := range [][]byte{
		[]byte("\"a\xffb\""),
		[]byte("{\"content\":\"bad \xc3\x28 byte\"}"),
		[]byte("{\"k\xfe\":\"v\"}"),
		[]byte(`"\ud800 lone surrogate"`),
	} {
		got, err := Extract("note", "", payload)
		if err != nil {
			t.Fatalf("Extract(note, %q): %v", payload, err)
		}
		if !utf8.ValidString(got) || !strings.ContainsRune(got, utf8.RuneError) {
			t.Errorf("Extract(note, %q) = %q, want valid UTF-8 with U+FFFD", payload, got)
		}
	}
}

func TestExtractDeterministic(t *testing.T) {
	payload := []byte(`{"z":{"b":[1,{"y":2,"x":3}],"a":"s"},"m":[{"k":"v","j":null}],"a":true,"q":"é"}`)
	first, err := Extract("custom", "", payload)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 { // map iteration order varies between runs
		if got, _ := Extract("custom", "", payload); got != first {
			t.Fatalf("Extract is not deterministic: %q then %q", first, got)
		}
	}
}

// FuzzExtract checks that Extract never panics and always returns valid
// UTF-8 for valid JSON.
func FuzzExtract(f *testing.F) {
	f.Add("chat_turn", []byte(`{"role":"user","content":"hi"}`))
	f.Add("email", []byte(`{"from":[{"name":"A","email":"a@x"}],"body":"b"}`))
	f.Add("custom", []byte(`[1,{"a":null},"\u00e9"]`))
	f.Fuzz(func(t *testing.T, typ string, payload []byte) {
		got, err := Extract(typ, "", payload)
		if err != nil {
			return
		}
		if !utf8.ValidString(got) {
			t.Errorf("Extract(%q, %q) = %q, not valid UTF-8", typ, payload, got)
		}
	})
}
