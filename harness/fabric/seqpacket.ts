/**
 * `AF_UNIX SOCK_SEQPACKET` sockets for Deno, through FFI to libc (Deno has no
 * SEQPACKET of its own). One datagram is one frame — the wire of cnuas-switch
 * and of the QEMU device models. Needs `--allow-ffi` (and `--allow-read` /
 * `--allow-write` are not involved: libc opens the path itself).
 *
 * The calls are synchronous and non-blocking (`MSG_DONTWAIT`); waiting is a
 * `poll(2)` with the caller's timeout, which blocks the JavaScript thread for
 * at most that long. `recvAsync` waits on a libc thread instead, for callers
 * that must keep their event loop running (a qtest oracle that also speaks
 * QMP, for instance).
 *
 * @example
 * ```ts
 * const server = SeqpacketServer.listen("/tmp/x.sock");
 * const client = SeqpacketSocket.connect("/tmp/x.sock");
 * const peer = server.accept(1000)!;
 * client.send(new Uint8Array([1, 2, 3]));
 * peer.recv(1000); // Uint8Array [1, 2, 3]
 * ```
 */
import { HilError } from "../errors.ts";

const LIBC_PATH = "/lib/x86_64-linux-gnu/libc.so.6";

const AF_UNIX = 1;
const SOCK_SEQPACKET = 5;
const SOCK_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1;
const SO_SNDBUF = 7;
const SO_RCVBUF = 8;
const SO_SNDBUFFORCE = 32;
const SO_RCVBUFFORCE = 33;
const MSG_TRUNC = 0x20;
const MSG_DONTWAIT = 0x40;
const MSG_NOSIGNAL = 0x4000;
const POLLIN = 0x1;
const POLLOUT = 0x4;
const POLLERR = 0x8;
const POLLHUP = 0x10;
const POLLRDHUP = 0x2000;
const EINTR = 4;
const EAGAIN = 11;
const SUN_PATH_MAX = 107;

/** Largest frame any of our wires carries (CnuasLink), plus one byte to see truncation. */
export const SEQPACKET_MAX_FRAME = 65536;

const SYMBOLS = {
  socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
  connect: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  bind: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  listen: { parameters: ["i32", "i32"], result: "i32" },
  accept4: { parameters: ["i32", "pointer", "pointer", "i32"], result: "i32" },
  send: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
  recv: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
  poll: { parameters: ["buffer", "u64", "i32"], result: "i32" },
  poll_async: {
    name: "poll",
    parameters: ["buffer", "u64", "i32"],
    result: "i32",
    nonblocking: true,
  },
  close: { parameters: ["i32"], result: "i32" },
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
  unlink: { parameters: ["buffer"], result: "i32" },
  strerror: { parameters: ["i32"], result: "pointer" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

type Libc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
let libc: Libc | undefined;

function lib(): Libc {
  libc ??= Deno.dlopen(LIBC_PATH, SYMBOLS).symbols;
  return libc;
}

function errno(): number {
  const p = lib().__errno_location();
  return p ? new Deno.UnsafePointerView(p).getInt32() : 0;
}

function describe(err: number): string {
  const p = lib().strerror(err);
  return p ? Deno.UnsafePointerView.getCString(p) : `errno ${err}`;
}

/** A socket call failed; `errno` is the libc error number. */
export class SeqpacketError extends HilError {
  constructor(readonly call: string, readonly errno: number, detail = "") {
    super(`${call}${detail ? ` ${detail}` : ""}: ${describe(errno)}`);
  }
}

/** The peer closed the connection (for a switch port: the cable was pulled). */
export class SeqpacketClosedError extends HilError {}

/** A datagram did not fit the socket within the timeout: the peer is not reading. */
export class SeqpacketTimeoutError extends HilError {}

function sockaddr(path: string): Uint8Array {
  const bytes = new TextEncoder().encode(path);
  if (bytes.length > SUN_PATH_MAX) {
    throw new RangeError(
      `socket path is ${bytes.length} bytes, the limit is ${SUN_PATH_MAX}: use a shorter path (e.g. under /tmp)`,
    );
  }
  const sa = new Uint8Array(2 + bytes.length + 1);
  sa[0] = AF_UNIX; // sun_family, little-endian u16
  sa.set(bytes, 2);
  return sa;
}

function cstring(path: string): Uint8Array {
  const b = new TextEncoder().encode(path);
  const out = new Uint8Array(b.length + 1);
  out.set(b);
  return out;
}

/** poll(2) on one fd; returns revents (0 on timeout). */
function pollFd(fd: number, events: number, timeoutMs: number): number {
  const pfd = new Uint8Array(8);
  const view = new DataView(pfd.buffer);
  view.setInt32(0, fd, true);
  view.setInt16(4, events, true);
  const deadline = performance.now() + Math.max(0, timeoutMs);
  for (;;) {
    const left = Math.max(0, Math.ceil(deadline - performance.now()));
    const n = lib().poll(pfd, 1n, timeoutMs < 0 ? -1 : left);
    if (n >= 0) return n === 0 ? 0 : view.getInt16(6, true);
    const e = errno();
    if (e !== EINTR) throw new SeqpacketError("poll", e);
  }
}

function newSocket(): number {
  const fd = lib().socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) throw new SeqpacketError("socket", errno());
  return fd;
}

function setBuffers(fd: number, bytes: number): void {
  const v = new Uint8Array(4);
  new DataView(v.buffer).setInt32(0, bytes, true);
  // The FORCE variants lift the sysctl ceiling when we are root; else take what we get.
  if (lib().setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, v, 4) < 0) {
    lib().setsockopt(fd, SOL_SOCKET, SO_SNDBUF, v, 4);
  }
  if (lib().setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, v, 4) < 0) {
    lib().setsockopt(fd, SOL_SOCKET, SO_RCVBUF, v, 4);
  }
}

/** Options of `SeqpacketSocket.connect` and `SeqpacketServer.accept`. */
export interface SeqpacketOptions {
  /** SO_SNDBUF/SO_RCVBUF in bytes (default 4 MiB, so bursts of frames fit). */
  bufferBytes?: number;
}

/** One connected SEQPACKET socket: datagrams in, datagrams out. */
export class SeqpacketSocket {
  #fd: number;
  #buf = new Uint8Array(SEQPACKET_MAX_FRAME + 1);

  /** Wrap an already connected descriptor (used by `SeqpacketServer.accept`). */
  constructor(fd: number) {
    this.#fd = fd;
  }

  /** Connect to a listening SEQPACKET socket at `path`. */
  static connect(path: string, opts: SeqpacketOptions = {}): SeqpacketSocket {
    const sa = sockaddr(path);
    const fd = newSocket();
    setBuffers(fd, opts.bufferBytes ?? 4 << 20);
    if (lib().connect(fd, sa, sa.length) < 0) {
      const e = errno();
      lib().close(fd);
      throw new SeqpacketError("connect", e, path);
    }
    return new SeqpacketSocket(fd);
  }

  /** The file descriptor (-1 once closed). */
  get fd(): number {
    return this.#fd;
  }

  #open(): number {
    if (this.#fd < 0) throw new SeqpacketClosedError("socket is closed");
    return this.#fd;
  }

  /**
   * Send one frame without blocking; false when the socket is full (EAGAIN).
   * Throws SeqpacketClosedError when the peer is gone.
   */
  trySend(frame: Uint8Array): boolean {
    const fd = this.#open();
    for (;;) {
      const n = lib().send(fd, frame, BigInt(frame.length), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n >= 0) return true;
      const e = errno();
      if (e === EINTR) continue;
      if (e === EAGAIN) return false;
      if (e === 32 || e === 104 || e === 107) throw new SeqpacketClosedError(describe(e));
      throw new SeqpacketError("send", e);
    }
  }

  /** Send one frame, waiting up to `timeoutMs` for room. */
  send(frame: Uint8Array, timeoutMs = 5000): void {
    const deadline = performance.now() + timeoutMs;
    while (!this.trySend(frame)) {
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new SeqpacketTimeoutError(
          `send of ${frame.length} bytes: no room for ${timeoutMs} ms; the peer is not reading`,
        );
      }
      pollFd(this.#fd, POLLOUT, Math.ceil(left));
    }
  }

  /** One frame if one is queued now, else null. Throws SeqpacketClosedError on EOF. */
  tryRecv(): Uint8Array | null {
    const fd = this.#open();
    for (;;) {
      const n = Number(
        lib().recv(fd, this.#buf, BigInt(this.#buf.length), MSG_DONTWAIT | MSG_TRUNC),
      );
      if (n > 0) return this.#buf.slice(0, Math.min(n, this.#buf.length));
      if (n === 0) {
        // SEQPACKET returns 0 for an empty datagram and for EOF alike.
        const rev = pollFd(fd, POLLIN | POLLRDHUP, 0);
        if (rev & (POLLHUP | POLLRDHUP | POLLERR)) {
          throw new SeqpacketClosedError("peer closed the connection");
        }
        return new Uint8Array(0);
      }
      const e = errno();
      if (e === EINTR) continue;
      if (e === EAGAIN) return null;
      if (e === 104) throw new SeqpacketClosedError(describe(e));
      throw new SeqpacketError("recv", e);
    }
  }

  /** The next frame, waiting up to `timeoutMs`; null on timeout. */
  recv(timeoutMs: number): Uint8Array | null {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const f = this.tryRecv();
      if (f) return f;
      const left = deadline - performance.now();
      if (left <= 0) return null;
      pollFd(this.#fd, POLLIN | POLLRDHUP, Math.ceil(left));
    }
  }

  /** Like `recv`, but waits on a libc thread so the event loop keeps running. */
  async recvAsync(timeoutMs: number): Promise<Uint8Array | null> {
    const deadline = performance.now() + timeoutMs;
    const pfd = new Uint8Array(8);
    const view = new DataView(pfd.buffer);
    for (;;) {
      const f = this.tryRecv();
      if (f) return f;
      const left = Math.ceil(deadline - performance.now());
      if (left <= 0) return null;
      view.setInt32(0, this.#open(), true);
      view.setInt16(4, POLLIN | POLLRDHUP, true);
      await lib().poll_async(pfd, 1n, left);
    }
  }

  /** Every frame queued right now, in order (none waited for). */
  drain(): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (let f = this.tryRecv(); f; f = this.tryRecv()) out.push(f);
    return out;
  }

  /**
   * Whether the peer has closed, waiting up to `timeoutMs` for it. Frames
   * still queued are discarded on the way.
   */
  waitClosed(timeoutMs: number): boolean {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      try {
        this.drain();
      } catch (e) {
        if (e instanceof SeqpacketClosedError) return true;
        throw e;
      }
      const left = deadline - performance.now();
      if (left <= 0) return false;
      pollFd(this.#fd, POLLIN | POLLRDHUP, Math.ceil(left));
    }
  }

  /** Close the socket (idempotent). */
  close(): void {
    if (this.#fd >= 0) lib().close(this.#fd);
    this.#fd = -1;
  }
}

/** A listening SEQPACKET socket: the switch end of a device's wire. */
export class SeqpacketServer {
  #fd: number;
  /** The socket file's path. */
  readonly path: string;

  private constructor(fd: number, path: string) {
    this.#fd = fd;
    this.path = path;
  }

  /** Listen at `path`, replacing a stale socket file left there. */
  static listen(path: string, backlog = 16): SeqpacketServer {
    const sa = sockaddr(path);
    lib().unlink(cstring(path));
    const fd = newSocket();
    if (lib().bind(fd, sa, sa.length) < 0 || lib().listen(fd, backlog) < 0) {
      const e = errno();
      lib().close(fd);
      throw new SeqpacketError("bind/listen", e, path);
    }
    return new SeqpacketServer(fd, path);
  }

  /** The next connection, waiting up to `timeoutMs`; null on timeout. */
  accept(timeoutMs: number, opts: SeqpacketOptions = {}): SeqpacketSocket | null {
    if (this.#fd < 0) throw new SeqpacketClosedError("server is closed");
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (pollFd(this.#fd, POLLIN, Math.max(0, Math.ceil(deadline - performance.now()))) & POLLIN) {
        const fd = lib().accept4(this.#fd, null, null, SOCK_CLOEXEC);
        if (fd >= 0) {
          setBuffers(fd, opts.bufferBytes ?? 4 << 20);
          return new SeqpacketSocket(fd);
        }
        const e = errno();
        if (e !== EAGAIN && e !== EINTR && e !== 103) throw new SeqpacketError("accept", e);
      }
      if (performance.now() >= deadline) return null;
    }
  }

  /** Stop listening and remove the socket file (idempotent). */
  close(): void {
    if (this.#fd >= 0) {
      lib().close(this.#fd);
      lib().unlink(cstring(this.path));
    }
    this.#fd = -1;
  }
}
