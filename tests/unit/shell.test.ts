/**
 * The shared shell helpers: `shq` must make any string one literal word for
 * a real POSIX shell, `sh` must return stdout or fail with the command
 * named, and `waitListening`'s shell, run by dash against this host's own
 * sockets, must see listeners on IPv4 and IPv6, wait for every port it is
 * given, stop early on the done tag and not take a connected socket for a
 * listening one.
 */
import assert from "node:assert/strict";
import { exec } from "../../harness/exec.ts";
import { sh, shq, waitListening } from "../../harness/guest/shell.ts";
import { RowFailure } from "../../harness/matrix/row.ts";
import type { Guest, RunOptions, RunResult } from "../../harness/vm/types.ts";

/** What the host's `sh` makes of `words` (printed one per line, then their count). */
async function shellWords(words: string): Promise<string> {
  const r = await exec([
    "sh",
    "-c",
    `for w in ${words}; do printf '[%s]\\n' "$w"; done; ` +
    `set -- ${words}; echo "$#"`,
  ]);
  return r.stdout;
}

const AWKWARD = [
  "plain",
  "it's",
  "'",
  "''",
  "a b  c",
  " leading and trailing ",
  "$HOME",
  "${HOME:-x}",
  "$(echo injected)",
  "`echo injected`",
  "back\\slash",
  "\\'",
  "ends with a backslash\\",
  '"double" quotes',
  "",
  "line one\nline two",
  "trailing newline\n",
  "tab\there",
  "* ? [a-z]",
  "; rm -rf / #",
  "ünïcödé ✓",
];

Deno.test("shq makes every awkward string exactly one literal word for sh", async () => {
  for (const s of AWKWARD) {
    assert.equal(await shellWords(shq(s)), `[${s}]\n1\n`, JSON.stringify(s));
  }
});

Deno.test("shq keeps words apart when several are joined with spaces", async () => {
  const words = ["a b", "", "it's", "$x"];
  assert.equal(await shellWords(words.map(shq).join(" ")), "[a b]\n[]\n[it's]\n[$x]\n4\n");
});

Deno.test("shq leaves a quote-free string as it is, inside single quotes", () => {
  assert.equal(shq("eth1"), "'eth1'");
  assert.equal(shq(""), "''");
  assert.equal(shq("it's"), `'it'\\''s'`);
});

/** A guest whose every command ends with `result`; records what it was asked. */
function fakeGuest(result: Partial<RunResult>): { g: Guest; asked: [string, RunOptions?][] } {
  const asked: [string, RunOptions?][] = [];
  const g: Guest = {
    name: "g9",
    consoleLog: "/dev/null",
    bootToSshSec: 0,
    startToSshSec: 0,
    startedFrom: "cold",
    run: (cmd, opts) => {
      asked.push([cmd, opts]);
      return Promise.resolve({ code: 0, stdout: "", stderr: "", durationSec: 0, ...result });
    },
    putFile: () => Promise.resolve(),
    getFile: () => Promise.resolve(new Uint8Array()),
    dmesg: () => Promise.resolve(""),
    qmp: () => Promise.resolve(undefined),
  };
  return { g, asked };
}

Deno.test("sh returns stdout and passes its timeout, 60 s by default", async () => {
  const { g, asked } = fakeGuest({ stdout: "out\n" });
  assert.equal(await sh(g, "true"), "out\n");
  assert.equal(await sh(g, "true", { timeoutSec: 5 }), "out\n");
  assert.deepEqual(asked.map(([, o]) => o?.timeoutSec), [60, 5]);
});

Deno.test("sh fails the row on a non-zero exit, naming guest, command, code and stderr", async () => {
  const { g } = fakeGuest({ code: 3, stderr: "x".repeat(1000) + "the reason\n" });
  await assert.rejects(sh(g, "false"), (e: unknown) => {
    assert.ok(e instanceof RowFailure);
    assert.match(e.message, /^g9: 'false' exited 3: x+the reason$/);
    assert.ok(e.message.length < 450, "stderr is cut to its tail");
    return true;
  });
});

Deno.test("sh throws the caller's error kind when given one", async () => {
  class BenchError extends Error {}
  const { g } = fakeGuest({ code: 1 });
  await assert.rejects(sh(g, "false", { error: BenchError }), BenchError);
});

/** Exit status of `script` under the host's sh (dash). */
async function run(script: string): Promise<number> {
  return (await exec(["/bin/sh", "-c", script], { allowFail: true })).code;
}

/** A port nobody on this host listens on (taken and given back). */
function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

Deno.test("waitListening: a listener on IPv4 and one on IPv6 are seen; all ports must listen", async () => {
  const v4 = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const v6 = Deno.listen({ hostname: "::1", port: 0 });
  try {
    const p4 = (v4.addr as Deno.NetAddr).port;
    const p6 = (v6.addr as Deno.NetAddr).port;
    assert.equal(await run(waitListening([p4], 2)), 0);
    assert.equal(await run(waitListening([p6], 2)), 0);
    assert.equal(await run(waitListening([p4, p6], 2)), 0);
    assert.equal(await run(waitListening([p4, freePort()], 2)), 1);
  } finally {
    v4.close();
    v6.close();
  }
});

Deno.test("waitListening: a port whose only socket is connected, not listening, is not taken", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  const client = await Deno.connect({ hostname: "127.0.0.1", port });
  const server = await l.accept();
  l.close(); // the connection stays, its sockets in ESTABLISHED with this port
  try {
    assert.equal(await run(waitListening([port], 2)), 1);
  } finally {
    client.close();
    server.close();
  }
});

Deno.test("waitListening: the done tag ends the wait at once; bad ports are refused", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/t.rc`, "1\n");
    const t0 = performance.now();
    assert.equal(await run(waitListening([freePort()], 300, `${dir}/t`)), 0);
    assert.ok(performance.now() - t0 < 5_000);
    assert.throws(() => waitListening([0], 1), RangeError);
    assert.throws(() => waitListening([65536], 1), RangeError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
