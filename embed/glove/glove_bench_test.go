package glove

import (
	"strings"
	"testing"
)

// benchProse is ordinary English of the kind agents store: chat, notes,
// meeting summaries.
const benchProse = `We met on Tuesday to review the quarterly budget. Maria said the marketing team
had already spent most of its allocation, and she asked whether we could move some money from the travel line.
John didn't agree: he thinks the conference in Berlin is worth it, because last year's event brought three new
customers. We decided to postpone the decision until Friday, when the finance department will send the updated
numbers. In the meantime, everyone should check their expenses and report anything unusual.
The deployment failed again last night. The database migration timed out after twenty minutes, and the rollback
left two tables in an inconsistent state. Sam restored them from the morning backup, so no customer data was lost,
but the service was down for about an hour. We'll add a health check before the migration step and split the
large table into smaller batches. I've also asked the vendor why their driver keeps dropping connections.
Remember to buy milk, bread and eggs on the way home, and call the dentist to move the appointment to next week.
The weather forecast says it will rain all weekend, so the picnic is probably cancelled.
`

// BenchmarkGloVeEmbed measures embedding throughput over English prose,
// about 1 KB and 8 KB per text.
func BenchmarkGloVeEmbed(b *testing.B) {
	g := New()
	dst := make([]float32, Dim)
	if _, err := g.EmbedInto(dst, "warm up"); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		text string
	}{
		{"1KB", benchProse[:1024]},
		{"8KB", strings.Repeat(benchProse, 8)[:8192]},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.text)))
			b.ReportAllocs()
			for b.Loop() {
				g.EmbedInto(dst, tc.text)
			}
		})
	}
}

// BenchmarkGloVeLoad measures the one-time check and decoding of the
// embedded table (SHA-256 of ~13 MB, hash table and SIF weights).
func BenchmarkGloVeLoad(b *testing.B) {
	b.SetBytes(int64(len(gloveData)))
	for b.Loop() {
		if _, err := parseGloVe(gloveData, gloveSHA256); err != nil {
			b.Fatal(err)
		}
	}
}
