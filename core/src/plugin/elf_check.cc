// The plugin loader's ELF checks (elf_check.h).
#include "plugin/elf_check.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

namespace cfx::internal {

namespace {

// This process's ELF class, byte order and machine.
constexpr bool kHost64 = sizeof(void*) == 8;
constexpr unsigned char kHostClass = kHost64 ? ELFCLASS64 : ELFCLASS32;
constexpr unsigned char kHostData =
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#elif defined(__i386__)
constexpr uint16_t kHostMachine = EM_386;
#elif defined(__arm__)
constexpr uint16_t kHostMachine = EM_ARM;
#elif defined(__riscv)
constexpr uint16_t kHostMachine = EM_RISCV;
#elif defined(__powerpc64__)
constexpr uint16_t kHostMachine = EM_PPC64;
#elif defined(__s390x__)
constexpr uint16_t kHostMachine = EM_S390;
#else
constexpr uint16_t kHostMachine = EM_NONE;  // not checked
#endif

struct Named {
  uint32_t code;
  const char* name;
};

constexpr Named kMachines[] = {
    {EM_X86_64, "x86-64"},    {EM_AARCH64, "AArch64"},    {EM_386, "x86 (32-bit)"},
    {EM_ARM, "ARM (32-bit)"}, {EM_RISCV, "RISC-V"},       {EM_PPC64, "PowerPC 64"},
    {EM_PPC, "PowerPC"},      {EM_S390, "s390"},          {EM_MIPS, "MIPS"},
    {EM_SPARCV9, "SPARC V9"}, {EM_LOONGARCH, "LoongArch"}};
constexpr Named kSegments[] = {{PT_LOAD, "PT_LOAD"},
                               {PT_DYNAMIC, "PT_DYNAMIC"},
                               {PT_INTERP, "PT_INTERP"},
                               {PT_NOTE, "PT_NOTE"},
                               {PT_PHDR, "PT_PHDR"},
                               {PT_TLS, "PT_TLS"},
                               {PT_GNU_EH_FRAME, "PT_GNU_EH_FRAME"},
                               {PT_GNU_PROPERTY, "PT_GNU_PROPERTY"}};

template <size_t N>
std::string NameOf(const Named (&table)[N], uint32_t code, const char* otherwise) {
  for (const Named& n : table)
    if (n.code == code) return n.name;
  return otherwise + std::to_string(code);
}

std::string MachineName(uint16_t machine) { return NameOf(kMachines, machine, "e_machine "); }
std::string SegmentType(uint32_t type) { return NameOf(kSegments, type, "type "); }

// end = offset + count * size, false when that overflows 64 bits.
bool TableEnd(uint64_t offset, uint64_t count, uint64_t size, uint64_t* end) {
  if (size != 0 && count > (std::numeric_limits<uint64_t>::max() - offset) / size) return false;
  *end = offset + count * size;
  return true;
}

// The checks for this process's class (Elf64_* or Elf32_* headers).
template <typename Ehdr, typename Phdr>
Status CheckTables(const ReadAt& read, uint64_t file_size, const std::string& who) {
  Ehdr eh;
  if (file_size < sizeof(eh) || !read(0, sizeof(eh), reinterpret_cast<char*>(&eh)))
    return errors::InvalidArgument(who, ": truncated: the file has ", file_size,
                                   " bytes, less than its ", sizeof(eh), "-byte ELF header");
  switch (eh.e_type) {
    case ET_DYN:
      break;
    case ET_REL:
      return errors::InvalidArgument(who,
                                     ": a relocatable object (ELF type ET_REL), not a shared "
                                     "object: link it with -shared (conflux_add_plugin does)");
    case ET_EXEC:
      return errors::InvalidArgument(who,
                                     ": an executable (ELF type ET_EXEC), not a shared object: "
                                     "link it with -shared (conflux_add_plugin does)");
    case ET_CORE:
      return errors::InvalidArgument(who, ": a core dump (ELF type ET_CORE), not a shared object");
    default:
      return errors::InvalidArgument(who, ": ELF type ", eh.e_type, ", not a shared object (",
                                     ET_DYN, ", ET_DYN)");
  }
  if (kHostMachine != EM_NONE && eh.e_machine != kHostMachine)
    return errors::InvalidArgument(who, ": built for ", MachineName(eh.e_machine),
                                   "; this process runs on ", MachineName(kHostMachine),
                                   ": rebuild the plugin for this machine");
  if (eh.e_version != EV_CURRENT)
    return errors::InvalidArgument(who, ": ELF version ", eh.e_version, " in its header, not ",
                                   EV_CURRENT);

  if (eh.e_phnum == 0 || eh.e_phnum == PN_XNUM)
    return errors::InvalidArgument(who, ": ", eh.e_phnum == 0 ? "no" : "an extended count of",
                                   " program headers: not a shared object the loader can map");
  if (eh.e_phentsize != sizeof(Phdr))
    return errors::InvalidArgument(who, ": program header entries of ", eh.e_phentsize,
                                   " bytes; this class's are ", sizeof(Phdr));
  uint64_t ph_end = 0;
  if (!TableEnd(eh.e_phoff, eh.e_phnum, sizeof(Phdr), &ph_end) || ph_end > file_size)
    return errors::InvalidArgument(who, ": truncated or damaged: its ", eh.e_phnum,
                                   " program headers at byte ", eh.e_phoff,
                                   " lie past the end of the file (", file_size, " bytes)");
  // The section header table is the last thing a linker writes: past the end, the file was cut.
  uint64_t sh_end = 0;
  if (eh.e_shoff != 0 &&
      (!TableEnd(eh.e_shoff, eh.e_shnum, eh.e_shentsize, &sh_end) || sh_end > file_size))
    return errors::InvalidArgument(who, ": truncated: its section header table at byte ",
                                   eh.e_shoff, " (", eh.e_shnum, " entries of ", eh.e_shentsize,
                                   " bytes) lies past the end of the file (", file_size,
                                   " bytes); an interrupted copy?");

  bool dynamic = false, load = false;
  for (uint64_t i = 0; i < eh.e_phnum; ++i) {
    Phdr ph;
    if (!read(eh.e_phoff + i * sizeof(Phdr), sizeof(ph), reinterpret_cast<char*>(&ph)))
      return errors::InvalidArgument(who, ": cannot read program header ", i);
    if (ph.p_type == PT_NULL) continue;
    dynamic |= ph.p_type == PT_DYNAMIC;
    load |= ph.p_type == PT_LOAD;
    uint64_t end = 0;
    if (!TableEnd(ph.p_offset, 1, ph.p_filesz, &end) || end > file_size)
      return errors::InvalidArgument(
          who, ": truncated or damaged: segment ", i, " (", SegmentType(ph.p_type),
          ") spans bytes ", ph.p_offset, " to ", static_cast<uint64_t>(ph.p_offset) + ph.p_filesz,
          " but the file has ", file_size, " bytes; an interrupted copy?");
    if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz)
      return errors::InvalidArgument(who, ": damaged: segment ", i, " (PT_LOAD) has ", ph.p_filesz,
                                     " bytes in the file but ", ph.p_memsz, " in memory");
  }
  if (!load || !dynamic)
    return errors::InvalidArgument(who, ": no ", load ? "PT_DYNAMIC" : "PT_LOAD",
                                   " segment: not a shared object the loader can map");
  return Status();
}

}  // namespace

Status CheckSharedObject(const ReadAt& read, uint64_t file_size, const std::string& who) {
  unsigned char ident[EI_NIDENT] = {0};
  if (file_size < 4 || !read(0, 4, reinterpret_cast<char*>(ident)) ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0)
    return errors::InvalidArgument(who, ": not a shared object (no ELF header)");
  if (file_size < EI_NIDENT || !read(0, EI_NIDENT, reinterpret_cast<char*>(ident)))
    return errors::InvalidArgument(who, ": truncated: the file has ", file_size,
                                   " bytes, less than the ", EI_NIDENT,
                                   " of an ELF identification");
  if (ident[EI_CLASS] != kHostClass)
    return errors::InvalidArgument(
        who, ": an ELF file of ",
        ident[EI_CLASS] == ELFCLASS32   ? "32-bit class"
        : ident[EI_CLASS] == ELFCLASS64 ? "64-bit class"
                                        : "class " + std::to_string(ident[EI_CLASS]),
        "; this process is ", kHost64 ? 64 : 32, "-bit: rebuild the plugin for it");
  if (ident[EI_DATA] != kHostData)
    return errors::InvalidArgument(
        who, ": an ELF file of ",
        ident[EI_DATA] == ELFDATA2LSB   ? "little-endian"
        : ident[EI_DATA] == ELFDATA2MSB ? "big-endian"
                                        : "unknown (" + std::to_string(ident[EI_DATA]) + ")",
        " byte order; this process is ", kHostData == ELFDATA2LSB ? "little" : "big",
        "-endian: rebuild the plugin for it");
  if (ident[EI_VERSION] != EV_CURRENT)
    return errors::InvalidArgument(who, ": ELF version ", static_cast<int>(ident[EI_VERSION]),
                                   " in its identification, not ", EV_CURRENT);
  if constexpr (kHost64)
    return CheckTables<Elf64_Ehdr, Elf64_Phdr>(read, file_size, who);
  else
    return CheckTables<Elf32_Ehdr, Elf32_Phdr>(read, file_size, who);
}

Status CheckSharedObjectBytes(std::string_view bytes, const std::string& who) {
  return CheckSharedObject(
      [bytes](uint64_t offset, size_t n, char* out) {
        if (offset > bytes.size() || n > bytes.size() - offset) return false;
        std::memcpy(out, bytes.data() + offset, n);
        return true;
      },
      bytes.size(), who);
}

Status CheckSharedObjectFile(const std::string& path, const std::string& who) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return errors::NotFound(who, ": the file does not exist");
    return errors::InvalidArgument(who, ": cannot be opened: ", std::strerror(err));
  }
  struct stat st;
  Status s;
  if (::fstat(fd, &st) != 0) {
    s = errors::InvalidArgument(who, ": cannot be read: ", std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    s = errors::InvalidArgument(who, ": not a shared object (not a regular file)");
  } else {
    s = CheckSharedObject(
        [fd](uint64_t offset, size_t n, char* out) {
          while (n > 0) {
            ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) return false;
            out += got;
            offset += static_cast<uint64_t>(got);
            n -= static_cast<size_t>(got);
          }
          return true;
        },
        static_cast<uint64_t>(st.st_size), who);
  }
  ::close(fd);
  return s;
}

}  // namespace cfx::internal
