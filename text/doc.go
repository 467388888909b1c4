// Package text turns an artifact's raw payload into searchable text and cuts that
// text into chunks, the spans that Loci indexes and retrieves.
//
// # Extraction
//
// [Extract] decodes a raw_payload JSON value and renders it as plain text. A JSON
// string payload is its own text, exactly as decoded (a chat turn's may be
// preceded by its speaker, see Chat turns). A JSON object whose
// artifact type is known and which holds at least one of that type's fields
// (see below; for chat_turn, the content) is rendered with the type's layout;
// every other payload is flattened (see Flattening). The result is
// deterministic, is valid UTF-8 (invalid sequences become U+FFFD) and is not
// Unicode-normalised.
//
// In the structured layouts each field is looked up under the keys listed,
// in that order; the first key holding a non-empty value wins. Keys are
// matched exactly (case-sensitive); a key repeated in one object counts with
// its last value, as everywhere in Extract. String values are trimmed of surrounding
// white space; missing, null and empty fields are left out together with
// their label. Fields not listed are ignored. A layout is a block of
// "Label: value" header lines, then, when there are both headers and a body,
// one blank line, then the body:
//
//	chat_turn           <speaker>: <content>           (see Chat turns)
//	                      role    role, author, speaker
//	                      content content, text, message, parts
//	document            Title: <title>
//	                    <content>
//	                      title   title, name, subject
//	                      content content, text, body
//	note                <content>
//	                      content content, text, body, note
//	email               Subject: <subject>
//	                    From: <from>
//	                    To: <to>
//	                    Date: <date>
//	                    <body>
//	                      subject subject, title
//	                      from    from, sender
//	                      to      to, recipients
//	                      date    date, sent_at, sentAt, received_at
//	                      body    body, text, content
//	calendar_event      Title: <title>
//	                    Start: <start>
//	                    End: <end>
//	                    Location: <location>
//	                    Attendees: <attendees>
//	                    <description>
//	                      title       title, summary, subject, name
//	                      start       start, start_time, startTime, starts_at
//	                      end         end, end_time, endTime, ends_at
//	                      location    location, place
//	                      attendees   attendees, participants, invitees
//	                      description description, body, notes, details
//	meeting_transcript  Title: <title>
//	                    <transcript>
//	                      title      title, name, subject, topic
//	                      transcript transcript, segments, utterances, turns, text, content
//	tool_call           Tool: <name>
//	                    <arguments>
//	                      name      tool, tool_name, toolName, name
//	                      arguments arguments, args, input, parameters, params
//	tool_result         Tool: <name>
//	                    <result>
//	                      name   tool, tool_name, toolName, name
//	                      result result, output, content, response, error
//	attachment          Filename: <filename>
//	                    Media type: <media type>
//	                    Description: <description>
//	                    <text>
//	                      filename    filename, file_name, fileName, name
//	                      media type  media_type, mediaType, mime_type, mimeType, content_type, contentType
//	                      description description, caption, alt_text, alt
//	                      text        text, extracted_text
//
// # Chat turns
//
// Clients name the speaker of a chat turn in one of three places, and
// [Extract] writes it first whichever they chose, so that a turn reads, and
// is indexed, the same way in every shape ([ChatSpeaker]):
//
//   - the role, when it is a name: {"role": "Caroline", "content": "hi"};
//   - under a generic role (user, assistant, system, tool, human, ai, model,
//     bot, function, developer; any case) or none, a capitalised name that
//     starts the content: {"role": "user", "content": "Caroline: hi"};
//   - else the artifact's actor_id, when it is a capitalised name: role
//     "user", actor_id "Caroline".
//
// All three give "Caroline: hi". A name is one to three words of letters
// (apostrophes allowed; words split at spaces, "_", "-" and ".") within 48
// bytes, none of them a generic role or a label word ("Note: ...",
// "Job Title: ...", "Sure: ..."); a time such as "10:30" is no name;
// capitalised means it starts with an upper-case letter. A turn without
// a speaker is "<role>: <content>" as sent ("user: hi"), or just the content
// without a role; a role that is neither generic nor a name ("tool_42") is
// kept and names no one. A chat_turn payload that is a JSON string is the
// content of a turn without a role. [TurnSpeaker] reads the speaker back
// from the text. Lower-case and numbered actor ids ("alice", "user-42") are
// taken for ids, not names: most clients keep one such id for a whole
// memory, the assistant's turns included.
//
// Field values are rendered as follows.
//
//   - Header values: numbers as written in the JSON, booleans as true/false,
//     arrays as their elements joined by ", ", objects flattened with "; "
//     between lines.
//   - People (email from and to, calendar attendees): a string, an object with
//     name (name, display_name, displayName) and email (email, address,
//     email_address) rendered "Name <email>" (or whichever of the two is
//     present), or a list of these joined by ", ".
//   - Calendar start and end: a string, or an object holding dateTime,
//     date_time, datetime or date, followed by " (<timeZone>)" when the object
//     has timeZone, time_zone or timezone.
//   - Bodies (content, description, text, ...): a string as it is; an array of
//     parts, one line each, where a part is a string or an object whose "text"
//     string is taken (the content-part shape of chat APIs), and any other
//     part is flattened; an object is flattened.
//   - Transcript: a string as it is, or a list of segments, one line each:
//     "<speaker>: <text>" for an object (speaker from speaker, name, role,
//     author; text from text, content, utterance), a string as it is.
//   - tool_call arguments and tool_result results: like bodies, and a string
//     that holds a JSON object or array (as function-calling APIs send
//     arguments) is decoded and flattened. tool_call also looks for name and
//     arguments inside a "function" object, the OpenAI tool-call shape, and a
//     tool that is an object contributes its "name".
//   - attachment: blob_pointer is never read or fetched; only the fields above
//     are text.
//
// # Flattening
//
// Any other JSON value is flattened into lines, in a fixed order so that the
// same value always gives the same text:
//
//   - an object contributes its members in byte order of their keys, skipping
//     blob_pointer at any depth (a reference to stored bytes, not text);
//   - a scalar gives one line "<path>: <value>", where path is the keys leading
//     to it joined by "." ("user.name: Ada"); at the top level the line is just
//     the value;
//   - an array contributes its elements in order, each under the array's own
//     path (so {"tags":["a","b"]} gives "tags: a" and "tags: b");
//   - strings are trimmed of surrounding white space (inner newlines are kept),
//     numbers are written exactly as they appear in the JSON, booleans as
//     true/false and null as null;
//   - empty strings, arrays and objects give no line.
//
// # Chunking
//
// [Chunks] splits extracted text into sentence-aware [Chunk]s of about a target
// number of tokens and never more than a maximum, counted by a [TokenCounter].
// The engine counts with the exact [BPE] counters ([O200kBase] by default,
// [CL100kBase]); [Estimate] is a cheap approximation for tests and tools.
package text
