package text_test

import (
	"fmt"

	"github.com/loci-memory/loci/text"
)

func ExampleExtract() {
	s, err := text.Extract("email", "", []byte(`{
		"subject": "Lunch?",
		"from": {"name": "Ada", "email": "ada@example.com"},
		"to": ["bob@example.com"],
		"body": "Noon at the usual place.",
		"attachments": [{"blob_pointer": "s3://mail/1"}]
	}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	// Output:
	// Subject: Lunch?
	// From: Ada <ada@example.com>
	// To: bob@example.com
	//
	// Noon at the usual place.
}

func ExampleChunks() {
	s := "Dr. Smith arrived at 3.15 p.m. today. The meeting ran long!\nNext steps: ship it."
	for _, c := range text.Chunks(s, text.Estimate{}, 8, 20) {
		fmt.Printf("[%d,%d) %d tokens: %s\n", c.Start, c.End, c.Tokens, c.Text)
	}
	// Output:
	// [0,37) 15 tokens: Dr. Smith arrived at 3.15 p.m. today.
	// [38,59) 5 tokens: The meeting ran long!
	// [60,80) 6 tokens: Next steps: ship it.
}
