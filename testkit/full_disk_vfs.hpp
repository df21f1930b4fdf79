#pragma once
// A full disk as SQLite meets it, without a disk to fill: a VFS in front of SQLite's default one
// that, while full() is set, answers every write with SQLITE_FULL, what SQLite's own unix VFS
// answers when write(2) says ENOSPC. Registered as the default VFS while the object lives, so a
// store opened meanwhile (run_store) writes through it; reads and everything else go straight to
// the default VFS. For the fault tests of the run queue (unit/actors/store_failure_test.cpp); the
// whole path with a real full disk is integration/disk_full_test.cpp's.

#include <atomic>
#include <stdexcept>

#include <sqlite3.h>

namespace cdui::test {

class full_disk_vfs {
public:
  full_disk_vfs() {
    auto& s = shared();
    s.real = sqlite3_vfs_find(nullptr);
    if (s.real == nullptr)
      throw std::runtime_error("SQLite has no default VFS");
    s.vfs = *s.real;
    s.vfs.zName = "cdui-full-disk";
    s.vfs.szOsFile = static_cast<int>(sizeof(file)) + s.real->szOsFile;
    s.vfs.xOpen = open;
    s.vfs.pNext = nullptr;
    if (sqlite3_vfs_register(&s.vfs, 1) != SQLITE_OK)
      throw std::runtime_error("SQLite refused the full-disk VFS");
  }
  ~full_disk_vfs() {
    auto& s = shared();
    sqlite3_vfs_unregister(&s.vfs);
    sqlite3_vfs_register(s.real, 1);
    s.full = false;
  }
  full_disk_vfs(const full_disk_vfs&) = delete;
  full_disk_vfs& operator=(const full_disk_vfs&) = delete;

  /// From now on every write fails (true), or goes through again (false).
  void set_full(bool full) { shared().full = full; }

private:
  /// What the VFS shares with its files (SQLite's C callbacks have no user pointer for files).
  struct state {
    sqlite3_vfs vfs{};
    sqlite3_vfs* real = nullptr;
    std::atomic<bool> full{false};
  };
  static state& shared() {
    static state s;
    return s;
  }

  /// A file of this VFS: SQLite's own file of the default VFS right behind it.
  struct file {
    sqlite3_file base;
    sqlite3_file* real;
  };
  static sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<file*>(f)->real; }
  static const sqlite3_io_methods* methods_of(sqlite3_file* f) { return real(f)->pMethods; }

  static int open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
    auto* shim = reinterpret_cast<file*>(f);
    shim->real = reinterpret_cast<sqlite3_file*>(shim + 1);
    auto& s = shared();
    int rc = s.real->xOpen(s.real, name, shim->real, flags, out_flags);
    shim->base.pMethods = shim->real->pMethods != nullptr ? &io_methods : nullptr;
    return rc;
  }

  static int close(sqlite3_file* f) { return methods_of(f)->xClose(real(f)); }
  static int read(sqlite3_file* f, void* p, int n, sqlite3_int64 at) { return methods_of(f)->xRead(real(f), p, n, at); }
  static int write(sqlite3_file* f, const void* p, int n, sqlite3_int64 at) {
    if (shared().full)
      return SQLITE_FULL;
    return methods_of(f)->xWrite(real(f), p, n, at);
  }
  static int truncate(sqlite3_file* f, sqlite3_int64 size) { return methods_of(f)->xTruncate(real(f), size); }
  static int sync(sqlite3_file* f, int flags) { return methods_of(f)->xSync(real(f), flags); }
  static int file_size(sqlite3_file* f, sqlite3_int64* size) { return methods_of(f)->xFileSize(real(f), size); }
  static int lock(sqlite3_file* f, int level) { return methods_of(f)->xLock(real(f), level); }
  static int unlock(sqlite3_file* f, int level) { return methods_of(f)->xUnlock(real(f), level); }
  static int check_reserved(sqlite3_file* f, int* out) { return methods_of(f)->xCheckReservedLock(real(f), out); }
  static int file_control(sqlite3_file* f, int op, void* arg) { return methods_of(f)->xFileControl(real(f), op, arg); }
  static int sector_size(sqlite3_file* f) { return methods_of(f)->xSectorSize(real(f)); }
  static int characteristics(sqlite3_file* f) { return methods_of(f)->xDeviceCharacteristics(real(f)); }
  static int shm_map(sqlite3_file* f, int page, int size, int extend, void volatile** p) {
    return methods_of(f)->xShmMap(real(f), page, size, extend, p);
  }
  static int shm_lock(sqlite3_file* f, int offset, int n, int flags) { return methods_of(f)->xShmLock(real(f), offset, n, flags); }
  static void shm_barrier(sqlite3_file* f) { methods_of(f)->xShmBarrier(real(f)); }
  static int shm_unmap(sqlite3_file* f, int remove) { return methods_of(f)->xShmUnmap(real(f), remove); }
  static int fetch(sqlite3_file* f, sqlite3_int64 at, int n, void** p) { return methods_of(f)->xFetch(real(f), at, n, p); }
  static int unfetch(sqlite3_file* f, sqlite3_int64 at, void* p) { return methods_of(f)->xUnfetch(real(f), at, p); }

  // Version 3, as the unix VFS's files have: SQLite calls the shm and fetch methods of WAL files.
  static inline const sqlite3_io_methods io_methods{
    3,          close,   read,      write,           truncate,     sync,       file_size,
    lock,       unlock,  check_reserved, file_control, sector_size, characteristics, shm_map,
    shm_lock,   shm_barrier, shm_unmap, fetch,       unfetch};
};

} // namespace cdui::test
