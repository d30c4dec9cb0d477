#!/usr/bin/python3
"""A FUSE passthrough that loses unsynced writes on power loss (Jepsen's LazyFS method, small).

    /usr/bin/python3 testbed/lazyfs.py <backing-dir> <mount-dir>

Runs in the foreground until killed or unmounted. What it models:

- File data: every write() is kept in this process's memory (a "page cache") and reaches the
  backing directory only when the file is fsync()ed (fdatasync too). Reads and sizes see the
  unsynced writes (read-your-writes), as a real page cache would.
- Metadata: create, mkdir, rename, unlink, rmdir, truncate, chmod, chown, utimens are applied to
  the backing directory at once, i.e. treated as durable the moment they return. A real file
  system (ext4 data=ordered) may lose recent metadata too; this layer is kinder there, so
  what it catches is lost *data* that was acknowledged before it was fsynced.
- Power loss: SIGKILL this process (then `fusermount3 -uz <mount-dir>`). The memory holding
  unsynced writes goes with it; the backing directory keeps only what was fsynced.
- Time passing: a kernel writes dirty pages back on its own (about 30 s after the write), so
  on a real machine what a program wrote a while ago is on disk even if it never fsynced.
  This layer does that only when asked: SIGUSR1 writes back every unsynced write (at the start
  of the next FUSE operation, between two others) and prints `lazyfs: written back <n> files`.

Not modelled: torn or reordered writes within an fsync, lost metadata, fsync of a directory
(a no-op: metadata is already applied), hard links, mmap writes, xattrs. The backing directory
is never fsynced itself: only this layer "loses power", the machine under it does not.

Single-threaded (nothreads): FUSE calls arrive one at a time, so no locking is needed. Files
are keyed by path; rename moves their unsynced writes along. libfuse's high-level API renames a
file that is unlinked while open to `.fuse_hidden*`, so the path keeps naming it until release.
"""

import errno
import os
import signal
import sys

try:  # Debian's python3-fusepy installs the module as `fusepy`; PyPI's as `fuse`.
    from fusepy import FUSE, FuseOSError, Operations
except ImportError:
    from fuse import FUSE, FuseOSError, Operations


class Dirty:
    """A file's unsynced writes: extents (offset, bytearray) in the order written."""

    def __init__(self):
        self.extents = []

    def write(self, offset, data):
        last = self.extents[-1] if self.extents else None
        if last is not None and last[0] + len(last[1]) == offset:
            last[1].extend(data)  # an append to the previous write: one extent (logs grow this way)
        else:
            self.extents.append((offset, bytearray(data)))

    def end(self):
        return max((o + len(d) for o, d in self.extents), default=0)

    def clip(self, length):
        """Truncate: writes past `length` are gone, a write across it is cut."""
        kept = []
        for o, d in self.extents:
            if o < length:
                kept.append((o, d[: length - o]))
        self.extents = kept

    def overlay(self, buf, offset):
        """Lay the unsynced writes over `buf`, which holds the backing bytes from `offset`."""
        for o, d in self.extents:
            lo, hi = max(o, offset), min(o + len(d), offset + len(buf))
            if lo < hi:
                buf[lo - offset : hi - offset] = d[lo - o : hi - o]


class LazyFS(Operations):
    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.dirty = {}  # path (as FUSE names it) -> Dirty
        self.writeback_due = False  # set by SIGUSR1

    def __call__(self, op, *args):
        # Every FUSE operation enters here: a requested writeback runs between two operations,
        # never inside one (the signal handler itself only sets the flag).
        if self.writeback_due:
            self.writeback_due = False
            paths = list(self.dirty)
            for path in paths:
                self.fsync(path, 0, None)
            print(f"lazyfs: written back {len(paths)} files", flush=True)
        return super().__call__(op, *args)

    def _real(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def _size(self, path, backing_size):
        d = self.dirty.get(path)
        return max(backing_size, d.end()) if d else backing_size

    # --- metadata, passed through at once -----------------------------------------------

    def getattr(self, path, fh=None):
        st = os.lstat(self._real(path))
        attrs = {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_atime", "st_mtime", "st_ctime")}
        attrs["st_size"] = self._size(path, st.st_size)
        return attrs

    def access(self, path, mode):
        if not os.access(self._real(path), mode):
            raise FuseOSError(errno.EACCES)

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._real(path))

    def readlink(self, path):
        return os.readlink(self._real(path))

    def statfs(self, path):
        sv = os.statvfs(self._real(path))
        return {k: getattr(sv, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    def mkdir(self, path, mode):
        os.mkdir(self._real(path), mode)

    def rmdir(self, path):
        os.rmdir(self._real(path))

    def chmod(self, path, mode):
        os.chmod(self._real(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._real(path), uid, gid)

    def utimens(self, path, times=None):
        os.utime(self._real(path), times)

    def symlink(self, target, source):
        os.symlink(source, self._real(target))

    def create(self, path, mode, fi=None):
        # Created (empty) at once; the data written to it waits for fsync like any other. The
        # kernel asks for it only when the name does not exist (O_TRUNC arrives as truncate).
        os.close(os.open(self._real(path), os.O_WRONLY | os.O_CREAT, mode))
        return 0

    def unlink(self, path):
        os.unlink(self._real(path))
        self.dirty.pop(path, None)  # its unsynced data dies with the name

    def rename(self, old, new):
        os.rename(self._real(old), self._real(new))
        self.dirty.pop(new, None)  # a file renamed over is gone, unsynced writes and all
        moved = {}
        for p in list(self.dirty):
            if p == old or p.startswith(old + "/"):  # the file, or everything under a directory
                moved[new + p[len(old) :]] = self.dirty.pop(p)
        self.dirty.update(moved)

    def truncate(self, path, length, fh=None):
        os.truncate(self._real(path), length)
        d = self.dirty.get(path)
        if d:
            d.clip(length)

    # --- data, held until fsync ---------------------------------------------------------

    def open(self, path, flags):
        if not os.path.exists(self._real(path)):
            raise FuseOSError(errno.ENOENT)
        return 0  # reads and fsync go by path, so no backing descriptor is kept open

    def read(self, path, size, offset, fh):
        real = self._real(path)
        end = min(offset + size, self._size(path, os.path.getsize(real)))
        if end <= offset:
            return b""
        with open(real, "rb") as f:
            f.seek(offset)
            buf = bytearray(f.read(end - offset))
        buf.extend(b"\0" * (end - offset - len(buf)))  # past the backing end: a hole or unsynced tail
        d = self.dirty.get(path)
        if d:
            d.overlay(buf, offset)
        return bytes(buf)

    def write(self, path, data, offset, fh):
        self.dirty.setdefault(path, Dirty()).write(offset, data)
        return len(data)

    def fsync(self, path, datasync, fh):
        d = self.dirty.pop(path, None)
        if not d:
            return 0
        fd = os.open(self._real(path), os.O_WRONLY)
        try:
            for o, data in d.extents:
                os.pwrite(fd, data, o)
        finally:
            os.close(fd)
        return 0

    def fsyncdir(self, path, datasync, fh):
        return 0  # metadata is applied at once (see the module comment)

    def flush(self, path, fh):
        return 0  # close() does not make data durable

    def release(self, path, fh):
        return 0


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: lazyfs.py <backing-dir> <mount-dir>")
    backing, mount = sys.argv[1], sys.argv[2]
    fs = LazyFS(backing)
    signal.signal(signal.SIGUSR1, lambda *_: setattr(fs, "writeback_due", True))
    # big_writes: up to 128 KiB a write call instead of 4 KiB (libfuse 2). Kernel attribute and
    # entry caches are kept short so sizes always come from getattr above.
    FUSE(fs, mount, foreground=True, nothreads=True, big_writes=True, attr_timeout=0, entry_timeout=0, negative_timeout=0)


if __name__ == "__main__":
    main()
