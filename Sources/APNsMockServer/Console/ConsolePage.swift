/// The console's page (`GET /` of ``MockConsole``): one HTML document with its styles and script
/// inline, so it works offline, that reads ``ConsoleAPI``. It lists what the mock received, live,
/// with filters; shows a request as a person would see it (an alert as a Lock Screen banner, a Live
/// Activity's content state, a background or widget push as what it wakes), its token's claims,
/// headers, pretty JSON and exact bytes; makes devices and removes their app; and switches faults.
/// Everything from a request is written with `textContent`, never as markup.
///
/// Its composer asks ``ConsoleAPI`` (`GET /api/push-types`) what each push type takes, offers only
/// that, and shows what `POST /api/compose` answers: the exact request, the Swift, or the rule the
/// notification breaks, on the field that breaks it.
enum ConsolePage {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Mock APNs console</title>
        <style>
          :root { color-scheme: light; --ink: #1d1d1f; --muted: #4a4a4f; --line: #c7c7cc; --accent: #0a58ca; --bad: #b00020; --ok: #11652f; }
          * { box-sizing: border-box; }
          body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f5f5f7; }
          header { padding: 12px 20px; background: #fff; border-bottom: 1px solid var(--line); display: flex; gap: 16px; align-items: baseline; }
          h1 { font-size: 20px; margin: 0; } h2 { font-size: 16px; margin: 0 0 8px; }
          main { display: grid; grid-template-columns: minmax(320px, 1fr) minmax(360px, 1.2fr); gap: 16px; padding: 16px 20px; }
          section { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; }
          label { display: inline-flex; flex-direction: column; font-size: 13px; color: var(--muted); margin: 0 8px 8px 0; }
          input, select, button { font: inherit; padding: 4px 8px; border: 1px solid #8e8e93; border-radius: 6px; color: var(--ink); background: #fff; }
          button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
          button.quiet { background: #fff; color: var(--accent); }
          button:focus-visible, input:focus-visible, select:focus-visible, tr:focus-visible { outline: 3px solid #ffbf47; outline-offset: 1px; }
          table { width: 100%; border-collapse: collapse; font-size: 14px; }
          th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid #e5e5ea; overflow-wrap: anywhere; }
          tbody tr { cursor: pointer; } tbody tr[aria-selected="true"] { background: #e8f0fe; }
          .accepted { color: var(--ok); font-weight: 600; } .rejected { color: var(--bad); font-weight: 600; }
          .banner { background: rgba(242,242,247,.95); border-radius: 18px; padding: 12px 14px; box-shadow: 0 2px 10px rgba(0,0,0,.18); max-width: 380px; margin: 8px 0 12px; }
          .banner .app { font-size: 12px; text-transform: uppercase; color: var(--muted); display: flex; justify-content: space-between; }
          .banner .title { font-weight: 600; } .banner .subtitle { font-weight: 500; }
          .badge { display: inline-block; min-width: 22px; padding: 0 6px; border-radius: 11px; background: #d70015; color: #fff; text-align: center; font-size: 12px; }
          pre { background: #f2f2f7; padding: 8px; border-radius: 6px; overflow: auto; font-size: 13px; }
          .muted { color: var(--muted); }
          .stack > * + * { margin-top: 16px; }
          .activity { background: #1c1c1e; color: #fff; border-radius: 18px; padding: 12px 14px; max-width: 380px; margin: 8px 0 12px; }
          .activity dl { display: grid; grid-template-columns: auto 1fr; gap: 2px 12px; margin: 6px 0 0; } .activity dt { color: #d1d1d6; } .activity dd { margin: 0; font-weight: 600; }
          #compose-fields { display: flex; flex-wrap: wrap; } #compose-fields textarea { font: 13px ui-monospace, monospace; min-width: 220px; }
          [aria-invalid="true"] { border-color: var(--bad); outline: 2px solid var(--bad); }
          .problem { color: var(--bad); font-weight: 600; }
        </style>
        </head>
        <body>
        <header><h1>Mock APNs console</h1><span id="status" class="muted" role="status" aria-live="polite">connecting…</span></header>
        <main>
          <div class="stack">
            <section aria-labelledby="received-heading">
              <h2 id="received-heading">Received</h2>
              <form id="filters">
                <label>App <input name="app" placeholder="com.example.app"></label>
                <label>Device <input name="device" placeholder="token"></label>
                <label>Push type <select name="push-type"><option value="">any</option><option>alert</option><option>background</option><option>voip</option><option>liveactivity</option><option>widgets</option><option>controls</option><option>complication</option><option>fileprovider</option><option>location</option><option>pushtotalk</option><option>mdm</option><option>accessory</option></select></label>
                <label>Verdict <select name="verdict"><option value="">any</option><option>accepted</option><option>rejected</option><option>faulted</option><option>Unregistered</option><option>BadDeviceToken</option></select></label>
                <button type="button" class="quiet" id="clear">Clear the list</button>
              </form>
              <table aria-label="Requests received, newest last">
                <thead><tr><th scope="col">#</th><th scope="col">Time</th><th scope="col">Device</th><th scope="col">Push type</th><th scope="col">Priority</th><th scope="col">Verdict</th></tr></thead>
                <tbody id="rows"></tbody>
              </table>
            </section>
            <section aria-labelledby="devices-heading">
              <h2 id="devices-heading">Devices</h2>
              <form id="device-form">
                <label>App <input name="app" required value="com.example.app"></label>
                <label>Environment <select name="environment"><option>sandbox</option><option>production</option></select></label>
                <button type="submit">Create a device</button>
              </form>
              <table aria-label="Devices"><thead><tr><th scope="col">Token</th><th scope="col">App</th><th scope="col">State</th><th scope="col"><span class="muted">Action</span></th></tr></thead><tbody id="devices"></tbody></table>
            </section>
            <section aria-labelledby="faults-heading">
              <h2 id="faults-heading">Faults</h2>
              <form id="fault-form">
                <label>Fault <select name="fault">
                  <option value="status:503:30">503 ServiceUnavailable, Retry-After 30</option>
                  <option value="goaway:0:0:0">GOAWAY</option>
                  <option value="never-answer">Stall: never answer</option>
                  <option value="rst-stream:2">Reset each stream</option>
                  <option value="status:429">429 TooManyRequests</option>
                  <option value="close-after:1">Close after one request</option>
                </select></label>
                <button type="submit">Switch on</button>
                <button type="button" class="quiet" id="fault-off">Switch off</button>
              </form>
              <p id="fault-state" class="muted" role="status">No fault.</p>
            </section>
          </div>
          <div class="stack">
            <section aria-labelledby="compose-heading">
              <h2 id="compose-heading">Compose</h2>
              <form id="compose-form" novalidate>
                <label>Push type <select id="compose-type" name="push-type"></select></label>
                <label><span id="compose-app-label">Bundle id</span> <input id="compose-app" name="app" value="com.example.app" required></label>
                <label>Priority <select id="compose-priority" name="priority"></select></label>
                <label>Connector <select id="compose-connector" name="connector"></select></label>
                <label>Target <select id="compose-target" name="target"></select></label>
                <label><span id="compose-to-label">Device token</span> <input id="compose-to" name="to" list="device-tokens" size="30" required></label>
                <datalist id="device-tokens"></datalist>
                <fieldset id="compose-fields" style="border:0;padding:0;margin:0"><legend class="muted">Fields this push type takes</legend></fieldset>
                <div id="compose-send"></div>
              </form>
              <p id="compose-problem" class="problem" role="alert"></p>
              <p id="compose-result" role="status"></p>
              <h3>The request</h3><pre id="compose-request" aria-label="The exact request">—</pre>
              <details id="compose-swift-details" open><summary>Swift that builds it</summary><pre id="compose-swift" aria-label="Swift that builds it">—</pre></details>
            </section>
            <section aria-labelledby="detail-heading" aria-live="polite">
              <h2 id="detail-heading">Request</h2>
              <div id="detail"><p class="muted">Select a request to see it as the device shows it, with its exact request.</p></div>
            </section>
          </div>
        </main>
        <script>
        "use strict";
        const rows = document.getElementById("rows"), detail = document.getElementById("detail"), statusLine = document.getElementById("status");
        let since = 0, received = [], selected = null;
        const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined && text !== null) e.textContent = String(text); if (cls) e.className = cls; return e; };
        function filters() { const data = new FormData(document.getElementById("filters")); const q = new URLSearchParams(); for (const [k, v] of data) if (v) q.set(k, v); return q; }
        function admits(r) { const q = filters();
          if (q.get("app") && r.app !== q.get("app")) return false;
          if (q.get("device") && r.device !== q.get("device").toLowerCase()) return false;
          if (q.get("push-type") && r["push-type"] !== q.get("push-type")) return false;
          const v = q.get("verdict"); if (v && !(v === r.verdict || (v === "rejected" && r.verdict !== "accepted") || (v === "faulted" && r.fault))) return false;
          return true; }
        function render() { rows.replaceChildren(); for (const r of received.filter(admits)) {
            const tr = el("tr"); tr.tabIndex = 0; tr.setAttribute("aria-selected", String(selected === r.number || (selected === "latest" && r === received[received.length - 1])));
            tr.append(el("td", r.number), el("td", new Date(r["received-at"]).toLocaleTimeString()), el("td", (r.device || r.path).slice(0, 12) + "…"),
              el("td", r["push-type"] || "—"), el("td", r.priority || "—"), el("td", r.verdict, r.verdict === "accepted" ? "accepted" : "rejected"));
            const open = () => { selected = r.number; render(); show(r); };
            tr.addEventListener("click", open); tr.addEventListener("keydown", e => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(); } });
            rows.append(tr); } }
        function banner(r, aps) { const alert = typeof aps.alert === "string" ? { body: aps.alert } : (aps.alert || {});
          const b = el("div", undefined, "banner"); b.setAttribute("role", "img"); b.setAttribute("aria-label", "Lock Screen banner");
          const top = el("div", undefined, "app"); top.append(el("span", r.app || r.topic), el("span", "now")); b.append(top);
          if (alert.title) b.append(el("div", alert.title, "title")); if (alert.subtitle) b.append(el("div", alert.subtitle, "subtitle"));
          if (alert.body) b.append(el("div", alert.body, "body"));
          const extras = el("div", undefined, "muted");
          if (aps.badge !== undefined) { extras.append("Badge "); extras.append(el("span", aps.badge, "badge")); extras.append(" "); }
          if (aps.sound) extras.append("Sound: " + (typeof aps.sound === "string" ? aps.sound : (aps.sound.name || "critical")) + " ");
          if (aps["interruption-level"]) extras.append("Interruption level: " + aps["interruption-level"]);
          if (extras.childNodes.length) b.append(extras); return b; }
        function show(r) { detail.replaceChildren(); const aps = (r.payload && r.payload.aps) || {};
          const what = el("h3", r["push-type"] === "alert" ? "On the Lock Screen" : "What it does"); detail.append(what);
          if (r["push-type"] === "alert" || (r["push-type"] === "liveactivity" && aps.alert)) detail.append(banner(r, aps));
          if (r["push-type"] === "liveactivity") { const card = el("div", undefined, "activity"); card.setAttribute("role", "img"); card.setAttribute("aria-label", "Live Activity");
            card.append(el("div", (r.app || r.topic || "") + " · Live Activity " + (aps.event || "update")));
            const dl = el("dl"); for (const [k, v] of Object.entries(aps["content-state"] || {})) dl.append(el("dt", k), el("dd", typeof v === "object" ? JSON.stringify(v) : v));
            card.append(dl); if (aps["dismissal-date"]) card.append(el("div", "Dismissed at " + new Date(aps["dismissal-date"] * 1000).toLocaleString(), "muted")); detail.append(card); }
          else if (r["push-type"] === "background") detail.append(el("p", "Wakes the app in the background (content-available), no alert."));
          else if (r["push-type"] === "widgets") detail.append(el("p", "Reloads the app's widgets."));
          else if (r["push-type"] === "controls") detail.append(el("p", "Reloads the app's controls."));
          else if (r["push-type"] !== "alert") detail.append(el("p", "A " + (r["push-type"] || "untyped") + " push."));
          const facts = el("table"); facts.setAttribute("aria-label", "The request's facts");
          for (const [k, v] of [["Verdict", r.verdict], ["Fault", r.fault], ["Status", r.status || "none: not answered"], ["Device", r.device], ["Topic", r.topic], ["Priority", r.priority], ["Collapse id", r["collapse-id"]], ["Expiration", r.expiration], ["apns-id", r["apns-id"]]])
            if (v !== undefined) { const tr = el("tr"); tr.append(el("th", k), el("td", v)); facts.append(tr); }
          const auth = r.authentication || {}; const tr = el("tr"); tr.append(el("th", "Authentication"), el("td", auth.kind === "token" ? "token: team " + auth["team-id"] + ", key " + auth["key-id"] + ", issued at " + auth["issued-at"] : auth.kind === "certificate" ? "certificate: " + auth["common-name"] : "none")); facts.append(tr);
          detail.append(facts);
          detail.append(el("h3", "Headers")); const h = el("table"); h.setAttribute("aria-label", "Headers"); for (const [n, v] of r.headers) { const tr = el("tr"); tr.append(el("th", n), el("td", v)); h.append(tr); } detail.append(h);
          detail.append(el("h3", "Payload")); detail.append(el("pre", r.payload ? JSON.stringify(r.payload, null, 2) : r.body));
          const raw = el("details"); raw.append(el("summary", "Exact bytes")); raw.append(el("pre", r.method + " " + r.path + "\n" + r.headers.map(([n, v]) => n + ": " + v).join("\n") + "\n\n" + r.body)); detail.append(raw); }
        async function poll() { try { const a = await fetch("/api/requests?since=" + since); const page = await a.json();
            if (page.requests.length) { received.push(...page.requests);
              // The newest is shown until the person picks one.
              if (selected === null || selected === "latest") { const last = received[received.length - 1]; selected = "latest"; render(); show(last); } else render(); }
            since = page["next-since"]; statusLine.textContent = received.length + " received"; }
          catch (e) { statusLine.textContent = "the mock does not answer"; } }
        async function devices() { const a = await fetch("/api/devices"); const list = (await a.json()).devices; const body = document.getElementById("devices"); body.replaceChildren();
          const tokens = document.getElementById("device-tokens"); tokens.replaceChildren(); for (const d of list) { const o = el("option"); o.value = d.token; o.label = d.app; tokens.append(o); }
          const to = document.getElementById("compose-to"); if (to && !to.value && list.length && document.getElementById("compose-target").value !== "channel") { to.value = list[list.length - 1].token; scheduleCompose(); }
          for (const d of list) { const tr = el("tr"); const remove = el("button", "Remove the app", "quiet"); remove.type = "button"; remove.disabled = !!d["app-removed-at"];
            remove.setAttribute("aria-label", "Remove the app from device " + d.token.slice(0, 8));
            remove.addEventListener("click", async () => { await fetch("/api/devices/" + d.token, { method: "DELETE" }); devices(); });
            tr.append(el("td", d.token), el("td", d.app), el("td", d["app-removed-at"] ? "app removed: 410 from " + new Date(d["app-removed-at"]).toLocaleTimeString() : "installed"), el("td")); tr.lastChild.append(remove); body.append(tr); } }
        document.getElementById("device-form").addEventListener("submit", async e => { e.preventDefault(); const data = new FormData(e.target);
          await fetch("/api/devices", { method: "POST", body: JSON.stringify({ app: data.get("app"), environment: data.get("environment") }) }); devices(); });
        document.getElementById("fault-form").addEventListener("submit", async e => { e.preventDefault(); const fault = new FormData(e.target).get("fault");
          const a = await fetch("/api/fault", { method: "PUT", body: JSON.stringify({ fault }) }); const answer = await a.json();
          document.getElementById("fault-state").textContent = a.ok ? "On: " + answer.description + ", on connections opened from now on" : answer.detail; });
        document.getElementById("fault-off").addEventListener("click", async () => { await fetch("/api/fault", { method: "DELETE" }); document.getElementById("fault-state").textContent = "No fault."; });
        document.getElementById("clear").addEventListener("click", async () => { await fetch("/api/requests", { method: "DELETE" }); received = []; selected = null; render(); });
        document.getElementById("filters").addEventListener("input", render);
        document.getElementById("filters").addEventListener("change", render);
        // The composer: what each push type takes comes from GET /api/push-types (the library's rules).
        let types = [], destinations = [], composeTimer = null;
        const $ = id => document.getElementById(id);
        const order = ["event", "alert", "badge", "sound", "content-state", "data"];
        function option(select, value, text, selectedValue) { const o = el("option", text === undefined ? value : text); o.value = String(value); if (String(value) === String(selectedValue)) o.selected = true; select.append(o); }
        function currentType() { return types.find(t => t.name === $("compose-type").value) || types[0]; }
        function labelled(text, control) { const l = el("label", text + " "); l.append(control); return l; }
        function buildForm() { const t = currentType(); const fields = $("compose-fields"); fields.replaceChildren(el("legend", "Fields " + t.name + " takes", "muted"));
          $("compose-app-label").textContent = t["app-field"] === "topic" ? "MDM topic" : "Bundle id";
          const p = $("compose-priority"); p.replaceChildren(); for (const v of t.priorities) option(p, v, v + (v === t["default-priority"] ? " (default)" : ""), t["default-priority"]);
          const c = $("compose-connector"); c.replaceChildren(); for (const v of t.connectors) option(c, v, v, t.connectors.includes("token") ? "token" : v);
          const g = $("compose-target"); g.replaceChildren(); for (const v of t.targets) option(g, v, v === "device" ? "a device" : "a broadcast channel");
          const shown = t.fields.filter(f => !["bundle-id", "topic", "priority"].includes(f.name)).sort((a, b) => ((order.indexOf(a.name) + 1 || 99) - (order.indexOf(b.name) + 1 || 99)) || a.name.localeCompare(b.name));
          for (const f of shown) { const id = "field-" + f.name; let control;
            if (f.kind === "alert") { for (const part of (t.name === "liveactivity" ? ["title", "body"] : ["title", "subtitle", "body"])) { const i = el("input"); i.id = id + "-" + part; i.dataset.field = "alert"; i.dataset.part = part; fields.append(labelled("Alert " + part, i)); } continue; }
            if (f.kind === "boolean") { control = el("input"); control.type = "checkbox"; }
            else if (f.kind === "choice") { control = el("select"); option(control, "", "—"); for (const v of f.options) option(control, v, v, f.name === "event" ? "update" : ""); }
            else if (f.kind === "object") { control = el("textarea"); control.rows = 2; control.placeholder = "{ JSON object }"; if (f.name === "content-state") control.value = "{}"; }
            else { control = el("input"); if (f.kind === "integer" || f.kind === "number") { control.type = "number"; control.step = f.kind === "integer" ? "1" : "any"; } }
            control.id = id; control.dataset.field = f.name; control.dataset.kind = f.kind; fields.append(labelled(f.name, control)); }
          const send = $("compose-send"); send.replaceChildren();
          for (const d of destinations) { const b = el("button", "Send to the " + d.name); b.type = "button"; b.id = "compose-send-" + d.name; b.addEventListener("click", () => compose(d.name)); send.append(b); send.append(" "); }
          if (!destinations.length) send.append(el("span", "This console composes only: start it with apns mock-server --console to send.", "muted"));
          targetChanged(); scheduleCompose(); }
        function targetChanged() { $("compose-to-label").textContent = $("compose-target").value === "channel" ? "Channel id" : "Device token"; }
        function notificationJSON() { const t = currentType(); const n = { "push-type": t.name }; n[t["app-field"]] = $("compose-app").value;
          if (Number($("compose-priority").value) !== t["default-priority"]) n.priority = Number($("compose-priority").value);
          const alert = {}; for (const control of $("compose-fields").querySelectorAll("[data-field]")) { const f = control.dataset.field;
            if (f === "alert") { if (control.value) alert[control.dataset.part] = control.value; continue; }
            if (control.type === "checkbox") { if (control.checked) n[f] = true; continue; }
            if (control.value === "") continue;
            if (control.dataset.kind === "integer" || control.dataset.kind === "number") { const v = Number(control.value); n[f] = Number.isFinite(v) ? v : control.value; }
            else if (control.dataset.kind === "object") { try { n[f] = JSON.parse(control.value); } catch (e) { n[f] = control.value; } }
            else n[f] = control.value; }
          if (Object.keys(alert).length) n.alert = alert; return n; }
        function scheduleCompose() { clearTimeout(composeTimer); composeTimer = setTimeout(() => compose(null), 250); }
        async function compose(destination) { if (!$("compose-to").value) { $("compose-problem").textContent = ""; $("compose-result").textContent = "Give a " + ($("compose-target").value === "channel" ? "channel id" : "device token: create a device below, or paste one") + "."; return; }
          const body = { notification: notificationJSON(), connector: $("compose-connector").value };
          body[$("compose-target").value] = $("compose-to").value; if (destination) body.send = destination;
          for (const c of document.querySelectorAll('#compose-form [aria-invalid]')) c.removeAttribute("aria-invalid");
          const a = await fetch("/api/compose", { method: "POST", body: JSON.stringify(body) }); const answer = await a.json();
          if (!a.ok) { $("compose-problem").textContent = (answer.field ? answer.field + ": " : "") + answer.detail; $("compose-request").textContent = "—"; $("compose-swift").textContent = "—";
            const field = answer.field === "device" || answer.field === "channel" ? $("compose-to") : answer.field && (document.querySelector('#compose-fields [data-field="' + answer.field + '"]') || (answer.field.startsWith("alert") && document.querySelector('#compose-fields [data-field="alert"]')) || $({ connector: "compose-connector", priority: "compose-priority", "bundle-id": "compose-app", topic: "compose-app" }[answer.field] || "none"));
            if (field) field.setAttribute("aria-invalid", "true"); if (destination) $("compose-result").textContent = "Not sent: " + answer.detail; return; }
          $("compose-problem").textContent = ""; $("compose-request").textContent = answer.request.text; $("compose-swift").textContent = answer.swift;
          if (answer.sent) { const s = answer.sent; $("compose-result").textContent = s.error ? "Not answered: " + s.error : s.status === 200 ? "Sent to the " + answer.destination + ": 200, apns-id " + s["apns-id"] : "Refused by the " + answer.destination + ": " + s.status + " " + (s.reason || "") ; poll(); } }
        async function loadTypes() { const a = await fetch("/api/push-types"); const answer = await a.json(); types = answer["push-types"]; destinations = answer.destinations;
          const select = $("compose-type"); for (const t of types) option(select, t.name, t.name, "alert"); buildForm(); }
        $("compose-type").addEventListener("change", buildForm);
        $("compose-target").addEventListener("change", () => { targetChanged(); scheduleCompose(); });
        $("compose-form").addEventListener("input", e => { if (e.target.id !== "compose-type") scheduleCompose(); });
        $("compose-form").addEventListener("change", e => { if (e.target.id !== "compose-type") scheduleCompose(); });
        $("compose-form").addEventListener("submit", e => e.preventDefault());
        poll(); devices(); loadTypes(); setInterval(poll, 1000);
        </script>
        </body>
        </html>
        """#
}
