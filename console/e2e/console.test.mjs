// Browser tests of the web console: Debian's chromium, driven by
// playwright-core, against a real `loci serve` built from this checkout and
// started on a loopback port with a temporary data directory. The data is
// ingested through the HTTP API; everything else happens in the browser.
//
// Environment: LOCI_CHROMIUM (default /usr/bin/chromium); LOCI_E2E_SHOTS, a
// directory for the screenshots (default: a new temporary directory, printed);
// LOCI_README_IMG, when set (to docs/img), where the README's screenshots go.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), "loci-console-e2e-"));
const shots = process.env.LOCI_E2E_SHOTS || join(tmp, "shots");
mkdirSync(shots, { recursive: true });
const adminKey = "e2e-admin-key-0123456789";
const ws = "e2e-team";

const desktop = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };

let bin, browser;
const servers = [];

/** startServer runs loci serve on a free loopback port and waits until it is healthy. */
async function startServer(name, args) {
  const proc = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--data", join(tmp, name), "--embedder", "glove",
    "--log-format", "json", "--log-level", "info", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  servers.push(proc);
  let log = "";
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("loci serve did not start in 60 s:\n" + log)), 60000);
    proc.on("exit", (code) => reject(new Error(`loci serve exited with ${code}:\n${log}`)));
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (chunk) => {
      log += chunk;
      for (const line of log.split("\n")) {
        if (!line.startsWith("{")) continue;
        let rec;
        try { rec = JSON.parse(line); } catch { continue; }
        if (rec.msg === "loci: serving" && rec.addr) {
          clearTimeout(timer);
          resolve("http://" + rec.addr);
        }
      }
      if (log.length > 1 << 16) log = log.slice(-(1 << 15));
    });
  });
  for (let i = 0; i < 300; i++) {
    const r = await fetch(base + "/health").catch(() => null);
    if (r && r.status === 200) return base;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error("loci serve never became healthy");
}

async function call(base, method, path, body, key = adminKey) {
  const headers = { "Content-Type": "application/json" };
  if (key) headers["X-API-Key"] = key;
  const r = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

/** newPage opens a page that fails the test on any script error or console error (CSP violations included). */
async function newPage(viewport) {
  const ctx = await browser.newContext({ viewport, deviceScaleFactor: 1 });
  const page = await ctx.newPage();
  page.problems = [];
  page.on("pageerror", (e) => page.problems.push("page error: " + e.message));
  page.on("console", (m) => {
    // A refused request (400 for bad input, 401 while signing in, 403 for a tenant's metrics) is logged by the browser itself.
    if (m.type() === "error" && !/Failed to load resource: the server responded with a status of 40[013]/.test(m.text())) {
      page.problems.push("console error: " + m.text());
    }
  });
  return page;
}

async function shot(page, name, fullPage = false) {
  await page.screenshot({ path: join(shots, name + ".png"), fullPage });
}

/** readmeShot takes one of the README's screenshots (a page or an element) when LOCI_README_IMG is set. */
async function readmeShot(target, name) {
  if (process.env.LOCI_README_IMG) await target.screenshot({ path: join(process.env.LOCI_README_IMG, name + ".png") });
}

const docs = [
  { type: "document", payload: { title: "Refund policy", content: "Refunds are issued within 30 days of purchase. Customers must include the order number." }, session: "s-policy" },
  { type: "note", payload: { content: "Update from finance: refunds are issued within 45 days of purchase since March." }, session: "s-policy" },
  { type: "chat_turn", payload: { role: "user", content: "How long do refunds take? I bought the blender two weeks ago." }, session: "s-chat" },
  { type: "chat_turn", payload: { role: "assistant", content: "Refunds usually arrive within a few business days after approval." }, session: "s-chat" },
  { type: "document", payload: { title: "Shipping", content: "Standard shipping takes five to seven business days; express shipping takes two days." }, session: "s-policy" },
  { type: "email", payload: { subject: "Warehouse move", content: "The warehouse moves to Leeds in June; pickups pause for one week." }, session: "s-mail" },
];

let base, ids = [];

before(async () => {
  bin = join(tmp, "loci");
  execFileSync("go", ["build", "-o", bin, "./cmd/loci"], { cwd: repo, stdio: "inherit" });
  base = await startServer("data", ["--api-key", adminKey]);
  for (let i = 0; i < docs.length; i++) {
    const d = docs[i];
    const r = await call(base, "POST", "/v1/ingest", {
      workspace_id: ws, actor_id: i % 2 ? "agent-7" : "alice", artifact_type: d.type, raw_payload: d.payload,
      session_id: d.session, timestamp: `2026-11-0${i + 1}T09:00:00Z`, idempotency_key: "e2e-" + i,
    });
    ids.push(r.artifact_id);
  }
  browser = await chromium.launch({
    executablePath: process.env.LOCI_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync",
      // rebind.test stands for a DNS-rebinding attacker's name, resolving to the loopback server.
      "--host-resolver-rules=MAP rebind.test 127.0.0.1"],
  });
});

after(async () => {
  await browser?.close();
  for (const p of servers) p.kill("SIGTERM");
  await Promise.all(servers.map((p) => p.exitCode !== null ? null : new Promise((res) => p.on("exit", res))));
  if (!process.env.LOCI_E2E_SHOTS) console.log("screenshots: " + shots);
  rmSync(bin, { force: true });
  rmSync(join(tmp, "data"), { recursive: true, force: true });
  rmSync(join(tmp, "open"), { recursive: true, force: true });
  rmSync(join(tmp, "browsers"), { recursive: true, force: true });
});

test("sign in, browse, pack, cite, receipt, feedback, server", async () => {
  const page = await newPage(desktop);

  // The server's root redirects to the console.
  const root = await fetch(base + "/", { redirect: "manual" });
  assert.equal(root.status, 302);
  assert.equal(root.headers.get("location"), "/ui");
  await page.goto(base + "/");
  assert.match(page.url(), /\/ui\/workspaces$/);

  // Sign in: the key is refused when wrong, kept in sessionStorage when right.
  await page.goto(base + "/ui");
  await page.getByLabel("API key").fill("not-a-key");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText("That key was not accepted.").waitFor();
  await page.getByLabel("API key").fill(adminKey);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Workspaces" }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("loci.apiKey")), adminKey);
  assert.equal(await page.evaluate(() => localStorage.length), 0);
  const row = page.getByRole("row", { name: new RegExp(ws) });
  assert.match(await row.innerText(), /\b6\b/, "the workspace lists its 6 artifacts");
  await shot(page, "workspaces-desktop");

  // The artifact list, newest first, filtered by type, then one artifact.
  await page.getByRole("link", { name: ws }).click();
  await page.getByRole("heading", { name: /Artifacts/ }).waitFor();
  // The heading renders before the list arrives: wait for its rows (CI of 883b700 read an empty table here).
  await page.waitForFunction((n) => document.querySelectorAll("table.artifacts tbody tr").length === n, ids.length);
  const listed = await page.locator("table.artifacts tbody tr td:last-child").allInnerTexts();
  assert.deepEqual(listed, [...ids].reverse(), "newest first");
  // Each row shows its time, its speaker and the start of its text.
  const previews = await page.getByTestId("preview").allInnerTexts();
  const speakers = await page.getByTestId("speaker").allInnerTexts();
  const times = await page.locator("table.artifacts tbody tr td:first-child").allInnerTexts();
  for (let i = 0; i < docs.length; i++) {
    const d = docs[docs.length - 1 - i];
    assert.ok(previews[i].includes(d.payload.content.slice(0, 30)), `row ${i} previews ${JSON.stringify(previews[i])}`);
    assert.equal(speakers[i], d.payload.role ?? ((docs.length - 1 - i) % 2 ? "agent-7" : "alice"), `row ${i}'s speaker`);
    assert.match(times[i], new RegExp(`^2026-11-0${docs.length - i} 09:00Z$`));
  }
  await readmeShot(page.locator("div.tablewrap"), "console-artifacts");
  await page.getByLabel("Type").selectOption("document");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.waitForURL(/artifact_type=document/);
  await page.waitForFunction(() => document.querySelectorAll("table.artifacts tbody tr").length === 2);
  await shot(page, "artifacts-desktop");
  const rows = () => page.locator("table.artifacts tbody tr td:last-child").allInnerTexts();
  const settle = (n) => page.waitForFunction((n) => document.querySelectorAll("table.artifacts tbody tr").length === n, n);
  // showing waits for the table to list exactly want. A row count alone is not enough: after a click the old page's
  // rows still count until the new page replaces them.
  const showing = async (want) => {
    await page
      .waitForFunction(
        (want) => {
          const cells = [...document.querySelectorAll("table.artifacts tbody tr td:last-child")];
          return cells.length === want.length && cells.every((c, i) => c.innerText.trim() === want[i]);
        },
        want,
        { timeout: 10000 },
      )
      .catch(() => {});
    assert.deepEqual(await rows(), want);
  };

  // Cursor paging, two at a time, forward and back.
  await page.getByRole("button", { name: "Reset" }).click();
  await page.getByLabel("Page size").selectOption("10");
  await settle(6);
  await page.goto(base + "/ui/workspaces/" + ws + "?limit=2");
  await showing([ids[5], ids[4]]);
  await page.getByRole("button", { name: "Next page" }).click();
  await page.waitForURL(/cursor=/);
  await showing([ids[3], ids[2]]);
  await page.getByRole("button", { name: "Next page" }).click();
  await showing([ids[1], ids[0]]);
  assert.ok(await page.getByRole("button", { name: "Next page" }).isDisabled(), "the last page has no next");
  await page.getByRole("button", { name: "Previous page" }).click();
  await showing([ids[3], ids[2]]);

  // Time and session filters (since and until are UTC, inclusive).
  await page.goto(base + "/ui/workspaces/" + ws);
  await page.getByLabel("Since (UTC)").fill("2026-11-02T09:00");
  await page.getByLabel("Until (UTC)").fill("2026-11-05T00:00");
  await page.getByLabel("Session").fill("s-chat");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.waitForURL(/since=2026-11-02T09%3A00%3A00Z/);
  await showing([ids[3], ids[2]]);
  await page.getByLabel("Actor").fill("agent-7");
  await page.getByRole("button", { name: "Filter" }).click();
  await showing([ids[3]]);

  await page.goto(base + "/ui/workspaces/" + ws);
  await page.getByRole("link", { name: ids[0] }).click();
  await page.getByRole("heading", { name: /Raw payload/ }).waitFor();
  assert.match(await page.locator("pre.payload").innerText(), /Refunds are issued within 30 days/);
  assert.match((await page.getByTestId("span-text").allInnerTexts()).join(" "), /Refunds are issued within 30 days of purchase/, "spans show their text");
  assert.match(await page.locator("main").innerText(), /indexed/);
  await shot(page, "artifact-desktop");

  // The pack playground: the same request gives the same pack hash.
  await page.getByRole("link", { name: ws }).click();
  await page.getByRole("link", { name: "Pack playground" }).click();
  await page.getByLabel("Query").fill("How long do refunds take?");
  await page.getByLabel("Max tokens").fill("400");
  await page.getByRole("button", { name: "Run pack" }).click();
  const hash = page.getByTestId("pack-hash");
  await hash.waitFor();
  const firstHash = await hash.innerText();
  assert.match(firstHash, /^sha256:[0-9a-f]{64}$/);
  assert.match(await page.getByTestId("context-text").innerText(), /\[cite:1\]/);
  await page.getByRole("button", { name: "Run pack" }).click();
  await page.waitForFunction(() => !document.querySelector("form.packform button[disabled]"));
  assert.equal(await hash.innerText(), firstHash, "deterministic pack hash");

  // Open citation 1: the cited span's text and its artifact.
  await page.getByRole("button", { name: "Open citation 1" }).first().click();
  const panel = page.getByTestId("citation");
  await panel.waitFor();
  const citedText = await panel.locator("blockquote").innerText();
  assert.match(citedText, /refund/i);
  // When and who: the evidence line's date and speaker, the citation's time and actor.
  assert.match(citedText, /^\d{4}-\d{2}-\d{2}( \d{2}:\d{2})? \S/);
  assert.match(await panel.getByTestId("cite-when").innerText(), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)? UTC$/);
  assert.notEqual(await panel.getByTestId("cite-speaker").innerText(), "—");
  const citedArtifact = await panel.getByRole("link", { name: /^[0-9a-f-]{36}$/ }).innerText();
  await shot(page, "pack-desktop", true);

  // The receipt, as a page.
  const receiptHref = await page.getByRole("link", { name: /…$/ }).getAttribute("href");
  await page.getByRole("link", { name: /…$/ }).click();
  await page.getByRole("heading", { name: /Token accounting/ }).waitFor();
  assert.match(await page.locator("main").innerText(), /Evidence \(\d+\)/);
  assert.equal(await page.locator("svg.hbars").count(), 2, "channel weights and selections");
  // The weight bars are to scale: each bar's length is its channel's weight (a full bar is 1).
  const receiptBody = await call(base, "GET", "/v1/receipts/" + receiptHref.split("/").pop());
  const full = Math.max(1, ...receiptBody.channel_contributions.map((c) => c.weight));
  for (const c of receiptBody.channel_contributions) {
    const w = Number(await page.locator(`svg.hbars >> nth=0 >> g[data-name="${c.channel}"] rect.bar`).getAttribute("width"));
    assert.ok(Math.abs(w - (c.weight / full) * 200) < 0.01, `${c.channel}: bar ${w} for weight ${c.weight}`);
  }
  assert.ok(receiptBody.channel_contributions.some((c) => c.weight < 0.5 * full), "a channel with a small weight is drawn short");
  await readmeShot(page.locator("section[aria-labelledby=h-channels]"), "console-receipt-channels");
  await shot(page, "receipt-desktop", true);
  // Back in the playground, the last pack is still there; mark the cited span wrong.
  await page.goBack();
  assert.equal(await hash.innerText(), firstHash);
  await page.getByRole("button", { name: "Open citation 1" }).first().click();
  assert.equal(await panel.locator("blockquote").innerText(), citedText);
  const spanId = (await panel.locator("dd.mono").innerText()).split(" ")[0];
  await panel.getByRole("button", { name: "Mark wrong" }).click();
  await panel.getByText(/Recorded mark_wrong on 1 span/).waitFor();
  await page.getByRole("button", { name: "Run the pack again" }).click();
  await page.getByTestId("exclusions").getByText("MARKED_WRONG 1").waitFor();
  assert.notEqual(await hash.innerText(), firstHash, "the pack changed");
  assert.doesNotMatch(await page.getByTestId("context-text").innerText(), new RegExp(escapeRe(citedText)));

  // The API agrees: the new receipt excludes the span as MARKED_WRONG.
  const newReceipt = await page.getByRole("link", { name: /…$/ }).getAttribute("href");
  assert.notEqual(newReceipt, receiptHref);
  const rc = await call(base, "GET", "/v1/receipts/" + newReceipt.split("/").pop());
  assert.ok(rc.exclusions.some((x) => x.span_id === spanId && x.artifact_id === citedArtifact && x.reason === "MARKED_WRONG"));
  assert.ok(!rc.evidence.some((c) => c.span_id === spanId));

  // Resolve the refund conflict in favour of its second claim: the first is excluded as OUTDATED next time.
  const conflict = page.locator("section.conflicts li").first();
  await conflict.getByRole("button", { name: /^Prefer/ }).last().click();
  await conflict.getByText(/^Resolved: .* wins/).waitFor();
  await page.getByRole("button", { name: "Run the pack again" }).click();
  await page.getByTestId("exclusions").getByText("OUTDATED 1").waitFor();
  assert.equal(await page.locator("section.conflicts").count(), 0, "no conflict is left in the pack");
  await page.getByRole("link", { name: /…$/ }).click();
  await page.locator('details.excl[data-reason="MARKED_WRONG"]').waitFor();
  await page.locator('details.excl[data-reason="OUTDATED"]').waitFor();
  await shot(page, "receipt-exclusions-desktop", true);
  await page.goBack();
  await page.getByTestId("pack-hash").waitFor();

  // A v2 serving profile: snippets with the same clickable citations.
  await page.getByLabel("Profile").selectOption("balanced");
  await page.getByRole("button", { name: "Run pack" }).click();
  await page.getByText("Profile used").waitFor();
  assert.match(await page.getByTestId("context-text").innerText(), /^\[cite:1\] \d{4}-\d{2}-\d{2} /m);
  await page.getByRole("button", { name: "Open citation 2" }).first().click();
  assert.ok((await panel.locator("blockquote").innerText()).length > 10);

  // Bad input is named; a metadata filter nothing matches gives an empty pack that abstains.
  await page.getByLabel("Profile").selectOption("");
  await page.getByLabel("Policy (JSON)").fill("{not json");
  await page.getByRole("button", { name: "Run pack" }).click();
  await page.getByText(/^policy is not valid JSON/).waitFor();
  await page.getByLabel("Policy (JSON)").fill('{"privacy_level": "sometimes"}');
  await page.getByRole("button", { name: "Run pack" }).click();
  await page.getByText(/privacy_level.*\(HTTP 400\)/).waitFor();
  await page.getByLabel("Policy (JSON)").fill("");
  await page.getByLabel(/Metadata filter/).fill("project=none-such");
  await page.getByRole("button", { name: "Run pack" }).click();
  await page.getByText("The pack is empty.").waitFor();
  assert.match(await page.locator("dl.summary").innerText(), /Abstained/);
  await page.getByLabel(/Metadata filter/).fill("");

  // Receipts: newest first, filtered by pack hash.
  await page.getByRole("link", { name: "Receipts" }).click();
  await page.getByRole("heading", { name: /^Receipts/ }).waitFor();
  await page.getByLabel("Pack hash").fill(firstHash);
  await page.getByRole("button", { name: "Filter" }).click();
  // Identical packs on identical data share one receipt (its id is derived from the request and the data version).
  await page.getByText(/^1 receipt with this pack hash/).waitFor();
  assert.equal(await page.locator("tbody tr a").getAttribute("href"), receiptHref);

  // Server: health, version, storage, and rates drawn from the metrics.
  await page.getByRole("link", { name: "Server" }).click();
  await page.getByTestId("storage").waitFor();
  // Load through the API while the page polls: the ingest and pack rates rise above zero.
  let loading = true;
  const load = (async () => {
    for (let i = 0; loading; i++) {
      await call(base, "POST", "/v1/ingest", { workspace_id: "e2e-load", actor_id: "bot", artifact_type: "note", raw_payload: { content: `load note ${i} about refunds` } });
      await call(base, "POST", "/v1/context-pack", { workspace_id: "e2e-load", query: "refunds " + i, max_tokens: 200 });
      await new Promise((res) => setTimeout(res, 100));
    }
  })();
  try {
    await page.waitForFunction(() => {
      const figs = [...document.querySelectorAll("figure.chart")];
      const now = (t) => Number(figs.find((f) => f.textContent.startsWith(t))?.querySelector("strong")?.textContent ?? 0);
      return document.querySelectorAll("svg.spark polyline").length === 4 &&
        document.querySelector("svg.spark polyline").getAttribute("points").split(" ").length >= 3 &&
        now("Artifacts ingested") > 0 && now("Context packs") > 0;
    }, null, { timeout: 20000 });
  } finally {
    loading = false;
    await load;
  }
  assert.match(await page.locator("main").innerText(), /Status\s+ok/);
  await shot(page, "server-desktop", true);

  // Sign out forgets the key.
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("API key").waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("loci.apiKey")), null);
  assert.deepEqual(page.problems, []);
});

test("phone width: the pages fit and the menu stays usable", async () => {
  const page = await newPage(phone);
  await page.goto(base + "/ui/workspaces");
  await page.getByLabel("API key").fill(adminKey);
  await page.keyboard.press("Enter"); // the form submits from the keyboard
  await page.getByRole("heading", { name: "Workspaces" }).waitFor();
  await shot(page, "workspaces-phone");
  await page.goto(base + "/ui/workspaces/" + ws + "/pack");
  await page.getByLabel("Query").fill("warehouse move");
  await page.getByRole("button", { name: "Run pack" }).click();
  await page.getByTestId("pack-hash").waitFor();
  await page.getByRole("button", { name: "Open citation 1" }).first().click();
  await page.getByTestId("citation").waitFor();
  await shot(page, "pack-phone");
  // The artifacts table fits: one card per artifact, every column in view.
  await page.goto(base + "/ui/workspaces/" + ws);
  await page.locator("table.artifacts tbody tr").first().waitFor();
  const sideways = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(sideways <= 0, `the artifacts page scrolls sideways by ${sideways}px at 390px`);
  const cells = await page.locator("table.artifacts tbody tr").first().locator("td").evaluateAll((tds) =>
    tds.map((td) => ({ label: td.dataset.label, right: td.getBoundingClientRect().right, visible: td.getBoundingClientRect().width > 0 })));
  assert.deepEqual(cells.map((c) => c.label), ["Time (UTC)", "Speaker", "Content", "Type", "Actor", "Session", "Artifact"]);
  for (const c of cells) assert.ok(c.visible && c.right <= 390, `${c.label} is cut: right edge ${c.right}`);
  await page.getByRole("link", { name: ids[5] }).waitFor();
  await shot(page, "artifacts-phone");
  await page.locator("table.artifacts").scrollIntoViewIfNeeded();
  await readmeShot(page, "console-artifacts-phone");
  await page.goto(base + "/ui/artifacts/" + ids[5]);
  await page.getByRole("heading", { name: /Raw payload/ }).waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `the artifact page scrolls sideways by ${overflow}px at 390px`);
  await shot(page, "artifact-phone");
  assert.deepEqual(page.problems, []);
});

test("a tenant key sees its own memory and no server-wide metrics", async () => {
  const t = await call(base, "POST", "/v1/register", { email: "tenant@example.com", plan: "pro" });
  await call(base, "POST", "/v1/ingest", { workspace_id: "tenant-ws", actor_id: "bob", artifact_type: "note", raw_payload: { content: "tenant note" } }, t.api_key);
  const page = await newPage(desktop);
  await page.goto(base + "/ui");
  await page.getByLabel("API key").fill(t.api_key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("link", { name: "tenant-ws" }).waitFor();
  assert.equal(await page.getByRole("link", { name: ws }).count(), 0, "another tenant's workspace is not listed");
  await page.getByRole("link", { name: "Server" }).click();
  await page.getByText("Server-wide rates are shown to the operator's admin key only.").waitFor();
  await page.getByTestId("storage").waitFor();
  // Keyboard: Tab reaches the skip link first, and it moves to the content.
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Skip to content");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.activeElement?.id === "main");
  // The metrics endpoint itself refuses the tenant's key.
  const r = await fetch(base + "/ui/api/metrics", { headers: { "X-API-Key": t.api_key } });
  assert.equal(r.status, 403);
  // A key revoked while the console is open signs the tab out at its next request.
  const { keys } = await call(base, "GET", "/v1/keys", undefined, t.api_key);
  const second = await call(base, "POST", "/v1/keys", {}, t.api_key); // a tenant keeps one live key
  await call(base, "DELETE", "/v1/keys/" + keys[0].id, undefined, second.api_key);
  await page.getByRole("link", { name: "Workspaces" }).click();
  await page.getByText(/The key was refused/).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("loci.apiKey")), null);
  assert.deepEqual(page.problems, []);

  // The admin key chooses a tenant and sees its workspaces.
  const admin = await newPage(desktop);
  await admin.goto(base + "/ui");
  await admin.getByLabel("API key").fill(adminKey);
  await admin.getByRole("button", { name: "Sign in" }).click();
  await admin.getByLabel("Tenant").waitFor();
  assert.equal(await admin.getByRole("row", { name: /tenant-ws/ }).count(), 0, "the admin's own list first");
  await admin.getByLabel("Tenant").selectOption(t.tenant_id);
  await admin.waitForURL(new RegExp("tenant=" + t.tenant_id));
  const tenantRow = admin.getByRole("row", { name: /tenant-ws/ });
  await tenantRow.waitFor();
  assert.match(await tenantRow.innerText(), /tenant-ws\s+1\b/);
  await shot(admin, "workspaces-admin-tenant");
  await readmeShot(admin.locator("main"), "console-admin-tenants");
  assert.deepEqual(admin.problems, []);
});

test("with authentication off the console opens directly", async () => {
  const open = await startServer("open", []);
  await call(open, "POST", "/v1/ingest", { workspace_id: "solo", actor_id: "me", artifact_type: "note", raw_payload: { content: "hello" } }, "");
  const page = await newPage(desktop);
  await page.goto(open + "/ui/");
  await page.getByRole("link", { name: "solo" }).waitFor();
  assert.match(await page.locator("header").innerText(), /authentication off/);
  assert.equal(await page.getByLabel("API key").count(), 0);
  assert.deepEqual(page.problems, []);
});

test("a page of another origin cannot write into a loopback server, nor read it by DNS rebinding", async () => {
  // The defaults: loopback, authentication off. The attacker's page is served
  // from another loopback port, so a different origin.
  const target = await startServer("browsers", []);
  const evil = createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end("<!doctype html><title>another site</title><p>another site</p>");
  });
  await new Promise((res) => evil.listen(0, "127.0.0.1", res));
  const page = await newPage(desktop);
  // This page's refused requests are the point: its console errors are not checked.
  try {
    await page.goto(`http://127.0.0.1:${evil.address().port}/`);
    const sent = await page.evaluate(async (base) => {
      const note = (how) => JSON.stringify({ workspace_id: "victim", actor_id: "page", artifact_type: "note", raw_payload: { content: "written by " + how } });
      const out = [];
      // A CORS simple request: text/plain, no preflight; the browser sends it
      // and only hides the answer.
      try {
        const r = await fetch(base + "/v1/ingest", { method: "POST", headers: { "Content-Type": "text/plain" }, body: note("text/plain fetch") });
        out.push("fetch " + r.status);
      } catch (e) { out.push("fetch refused by the browser"); }
      // no-cors: sent, the answer opaque.
      const r = await fetch(base + "/v1/ingest", { method: "POST", mode: "no-cors", body: note("no-cors fetch") });
      out.push("no-cors " + r.type);
      out.push("beacon " + navigator.sendBeacon(base + "/v1/ingest", note("beacon")));
      try {
        await fetch(base + "/mcp", { method: "POST", mode: "no-cors", body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call",
          params: { name: "remember", arguments: { workspace_id: "victim", actor_id: "page", artifact_type: "note", raw_payload: { content: "via mcp" } } } }) });
      } catch (e) { /* opaque either way */ }
      return out;
    }, target);
    assert.deepEqual(sent, ["fetch refused by the browser", "no-cors opaque", "beacon true"]);

    // DNS rebinding: a name of the attacker's that resolves to 127.0.0.1
    // makes the page same-origin with the server; its Host gives it away.
    const port = new URL(target).port;
    const rebound = await page.goto(`http://rebind.test:${port}/v1/workspaces/victim/artifacts`);
    assert.equal(rebound.status(), 403);
    assert.match(await rebound.text(), /Host .*refused/);
    const health = await page.goto(`http://rebind.test:${port}/health`);
    assert.equal(health.status(), 403);
  } finally {
    await page.context().close();
    evil.close();
  }

  // Nothing was stored, and the requests did arrive: they were refused (403,
  // the Origin), as the server's metrics count them.
  const stored = await call(target, "GET", "/v1/workspaces/victim/artifacts", undefined, "");
  assert.deepEqual(stored.artifacts, []);
  const metrics = await (await fetch(target + "/ui/api/metrics")).text();
  const refused = (route) => Number((metrics.match(new RegExp(`loci_http_requests_total\\{method="POST",route="${escapeRe(route)}",status="403"\\} (\\d+)`)) || [])[1] || 0);
  assert.ok(refused("/v1/ingest") >= 3, "the page's ingests reached the server and were refused:\n" + metrics.split("\n").filter((l) => l.includes("requests_total")).join("\n"));
  assert.ok(refused("/mcp") >= 1, "the page's MCP call reached the server and was refused");

  // The console, same-origin, still works on that server.
  const ui = await newPage(desktop);
  await call(target, "POST", "/v1/ingest", { workspace_id: "own", actor_id: "me", artifact_type: "note", raw_payload: { content: "mine" } }, "");
  await ui.goto(target + "/ui/");
  await ui.getByRole("link", { name: "own" }).waitFor();
  assert.deepEqual(ui.problems, []);
});

function escapeRe(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
