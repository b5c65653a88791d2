// ELF parsing for the library audit, written against <elf.h>. Little-endian ELF32 and ELF64.
// Offsets and sizes come from the file and are never trusted: every access goes through
// ByteView::read, which checks bounds with overflow-safe arithmetic.
#include "verify/checks/elf_reader.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <type_traits>

#include "util/fs.h"

namespace stitch {
namespace {

constexpr uint64_t kMaxSymbols = 1u << 22;  // more than any real program; bounds hostile counts

class ByteView {
 public:
  explicit ByteView(std::string_view bytes) : b_(bytes) {}
  uint64_t size() const { return b_.size(); }
  bool has(uint64_t offset, uint64_t length) const {
    return offset <= b_.size() && length <= b_.size() - offset;
  }
  template <typename T>
  bool read(uint64_t offset, T& out) const {
    if (!has(offset, sizeof(T))) return false;
    std::memcpy(&out, b_.data() + offset, sizeof(T));
    return true;
  }
  // NUL-terminated string at `offset`, not reaching past `limit`.
  std::optional<std::string> c_string(uint64_t offset, uint64_t limit) const {
    limit = std::min<uint64_t>(limit, b_.size());
    if (offset >= limit) return std::nullopt;
    const void* end = std::memchr(b_.data() + offset, '\0', limit - offset);
    if (end == nullptr) return std::nullopt;
    return std::string(b_.data() + offset, static_cast<const char*>(end));
  }

 private:
  std::string_view b_;
};

// The ELF structures of one class (64- or 32-bit). Symbol binding and visibility are the same
// bit fields in both (ELF64_ST_BIND == ELF32_ST_BIND).
template <bool Is64>
struct ElfTypes {
  using Ehdr = std::conditional_t<Is64, Elf64_Ehdr, Elf32_Ehdr>;
  using Phdr = std::conditional_t<Is64, Elf64_Phdr, Elf32_Phdr>;
  using Shdr = std::conditional_t<Is64, Elf64_Shdr, Elf32_Shdr>;
  using Dyn = std::conditional_t<Is64, Elf64_Dyn, Elf32_Dyn>;
  using Sym = std::conditional_t<Is64, Elf64_Sym, Elf32_Sym>;
  using Word = std::conditional_t<Is64, uint64_t, uint32_t>;  // GNU hash bloom word
  static unsigned char bind(unsigned char info) { return ELF64_ST_BIND(info); }
  static unsigned char visibility(unsigned char other) { return ELF64_ST_VISIBILITY(other); }
};

struct Segment {
  uint64_t vaddr, filesz, offset;
};

template <bool Is64>
class ElfParser {
  using T = ElfTypes<Is64>;

 public:
  explicit ElfParser(std::string_view bytes) : v_(bytes) {}

  Result<ElfDynamicInfo> parse() {
    typename T::Ehdr eh;
    if (!v_.read(0, eh)) return make_error("truncated ELF header");
    if (eh.e_type != ET_DYN && eh.e_type != ET_EXEC)
      return make_error("not a shared library (e_type {})", eh.e_type);
    STITCH_TRY(read_segments(eh));
    if (!dynamic_) return make_error("no PT_DYNAMIC segment: not dynamically linked");
    STITCH_TRY(read_dynamic());
    ElfDynamicInfo info;
    info.is_64_bit = Is64;
    for (uint64_t name : needed_offsets_) {
      STITCH_ASSIGN_OR_RETURN(std::string lib, dyn_string(name));
      info.needed.push_back(std::move(lib));
    }
    std::set<std::string> imported, exported;
    if (symtab_) {
      const uint64_t count = symbol_count();
      STITCH_TRY(
          read_symbols(*symtab_, count, strtab_off_, strtab_off_ + strsz_, imported, exported));
    }
    // Section headers are optional and may disagree with the loader's view: read .dynsym too, if
    // sane.
    read_section_dynsym(eh, imported, exported);
    info.imported_symbols.assign(imported.begin(), imported.end());
    info.exported_symbols.assign(exported.begin(), exported.end());
    return info;
  }

 private:
  Status read_segments(const typename T::Ehdr& eh) {
    if (eh.e_phnum == 0) return make_error("no program headers");
    if (eh.e_phnum == PN_XNUM) return make_error("extended program header count is not supported");
    if (eh.e_phentsize < sizeof(typename T::Phdr))
      return make_error("bad e_phentsize {}", eh.e_phentsize);
    for (uint64_t i = 0; i < eh.e_phnum; ++i) {
      typename T::Phdr ph;
      if (!v_.read(eh.e_phoff + i * eh.e_phentsize, ph))
        return make_error("program header {} out of bounds", i);
      if (ph.p_type == PT_LOAD) segments_.push_back(Segment{ph.p_vaddr, ph.p_filesz, ph.p_offset});
      if (ph.p_type == PT_DYNAMIC) {
        if (!v_.has(ph.p_offset, ph.p_filesz)) return make_error("PT_DYNAMIC out of bounds");
        dynamic_ = Segment{ph.p_vaddr, ph.p_filesz, ph.p_offset};
      }
    }
    return {};
  }

  // File offset of virtual address `addr`, through the PT_LOAD segments.
  std::optional<uint64_t> to_offset(uint64_t addr) const {
    for (const Segment& s : segments_) {
      if (addr >= s.vaddr && addr - s.vaddr < s.filesz) {
        const uint64_t off = s.offset + (addr - s.vaddr);
        if (off >= s.offset && off < v_.size()) return off;
      }
    }
    return std::nullopt;
  }

  Status read_dynamic() {
    std::optional<uint64_t> strtab, symtab;
    uint64_t syment = sizeof(typename T::Sym);
    const uint64_t count = dynamic_->filesz / sizeof(typename T::Dyn);
    for (uint64_t i = 0; i < count; ++i) {
      typename T::Dyn d;
      if (!v_.read(dynamic_->offset + i * sizeof(d), d))
        return make_error("dynamic entry {} out of bounds", i);
      const uint64_t value = d.d_un.d_val;
      switch (d.d_tag) {
        case DT_NULL:
          i = count;
          break;
        case DT_NEEDED:
          needed_offsets_.push_back(value);
          break;
        case DT_STRTAB:
          strtab = value;
          break;
        case DT_STRSZ:
          strsz_ = value;
          break;
        case DT_SYMTAB:
          symtab = value;
          break;
        case DT_SYMENT:
          syment = value;
          break;
        case DT_HASH:
          hash_ = value;
          break;
        case DT_GNU_HASH:
          gnu_hash_ = value;
          break;
        default:
          break;
      }
    }
    if (syment != sizeof(typename T::Sym)) return make_error("unexpected DT_SYMENT {}", syment);
    if (!strtab) {
      if (!needed_offsets_.empty()) return make_error("DT_NEEDED without DT_STRTAB");
      return {};
    }
    auto str_off = to_offset(*strtab);
    if (!str_off) return make_error("DT_STRTAB address {:#x} is not in a loaded segment", *strtab);
    strtab_off_ = *str_off;
    if (!v_.has(strtab_off_, strsz_)) strsz_ = v_.size() - strtab_off_;  // clamp a lying DT_STRSZ
    if (symtab) {
      auto sym_off = to_offset(*symtab);
      if (!sym_off)
        return make_error("DT_SYMTAB address {:#x} is not in a loaded segment", *symtab);
      symtab_ = *sym_off;
    }
    return {};
  }

  Result<std::string> dyn_string(uint64_t index) const {
    if (index >= strsz_) return make_error("string index {} past DT_STRSZ {}", index, strsz_);
    auto s = v_.c_string(strtab_off_ + index, strtab_off_ + strsz_);
    if (!s) return make_error("unterminated string at index {}", index);
    return *s;
  }

  // Number of .dynsym entries, from the hash tables (the loader's source), else from the layout.
  uint64_t symbol_count() const {
    uint64_t count = 0;
    if (hash_) {
      if (auto off = to_offset(*hash_)) {
        uint32_t nchain = 0;
        if (v_.read(*off + 4, nchain)) count = std::max<uint64_t>(count, nchain);
      }
    }
    if (gnu_hash_) count = std::max(count, gnu_hash_count());
    if (count == 0 && strtab_off_ > *symtab_)
      count = (strtab_off_ - *symtab_) / sizeof(typename T::Sym);
    const uint64_t fits = (v_.size() - std::min(v_.size(), *symtab_)) / sizeof(typename T::Sym);
    return std::min({count, fits, kMaxSymbols});
  }

  uint64_t gnu_hash_count() const {
    auto off = to_offset(*gnu_hash_);
    if (!off) return 0;
    uint32_t header[4];  // nbuckets, symoffset, bloom_size, bloom_shift
    if (!v_.read(*off, header)) return 0;
    const uint64_t nbuckets = header[0], symoffset = header[1], bloom = header[2];
    const uint64_t buckets = *off + 16 + bloom * sizeof(typename T::Word);
    if (nbuckets > kMaxSymbols || bloom > kMaxSymbols || !v_.has(buckets, nbuckets * 4)) return 0;
    uint64_t last = 0;
    for (uint64_t b = 0; b < nbuckets; ++b) {
      uint32_t start = 0;
      v_.read(buckets + b * 4, start);
      last = std::max<uint64_t>(last, start);
    }
    if (last < symoffset) return symoffset;
    const uint64_t chains = buckets + nbuckets * 4;
    for (uint64_t index = last; index - last < kMaxSymbols; ++index) {
      uint32_t hash = 0;
      if (!v_.read(chains + (index - symoffset) * 4, hash)) return index;
      if (hash & 1u) return index + 1;
    }
    return 0;
  }

  Status read_symbols(uint64_t offset, uint64_t count, uint64_t str_begin, uint64_t str_end,
                      std::set<std::string>& imported, std::set<std::string>& exported) const {
    for (uint64_t i = 1; i < count; ++i) {  // entry 0 is the null symbol
      typename T::Sym sym;
      if (!v_.read(offset + i * sizeof(sym), sym)) return make_error("symbol {} out of bounds", i);
      if (sym.st_name == 0) continue;
      auto name = v_.c_string(str_begin + sym.st_name, str_end);
      if (!name) return make_error("symbol {} has a name outside the string table", i);
      const unsigned char bind = T::bind(sym.st_info);
      if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) continue;
      if (sym.st_shndx == SHN_UNDEF) {
        imported.insert(std::move(*name));
      } else {
        const unsigned char vis = T::visibility(sym.st_other);
        if (vis == STV_DEFAULT || vis == STV_PROTECTED) exported.insert(std::move(*name));
      }
    }
    return {};
  }

  void read_section_dynsym(const typename T::Ehdr& eh, std::set<std::string>& imported,
                           std::set<std::string>& exported) const {
    if (eh.e_shnum == 0 || eh.e_shentsize < sizeof(typename T::Shdr)) return;
    for (uint64_t i = 0; i < eh.e_shnum; ++i) {
      typename T::Shdr sh;
      if (!v_.read(eh.e_shoff + i * eh.e_shentsize, sh)) return;
      if (sh.sh_type != SHT_DYNSYM || sh.sh_entsize != sizeof(typename T::Sym)) continue;
      typename T::Shdr strings;
      if (sh.sh_link >= eh.e_shnum ||
          !v_.read(eh.e_shoff + uint64_t{sh.sh_link} * eh.e_shentsize, strings))
        return;
      if (!v_.has(sh.sh_offset, sh.sh_size) || !v_.has(strings.sh_offset, strings.sh_size)) return;
      const uint64_t count = std::min<uint64_t>(sh.sh_size / sizeof(typename T::Sym), kMaxSymbols);
      // Best effort: a malformed section table adds nothing but does not fail the audit.
      (void)read_symbols(sh.sh_offset, count, strings.sh_offset,
                         strings.sh_offset + strings.sh_size, imported, exported);
    }
  }

  ByteView v_;
  std::vector<Segment> segments_;
  std::optional<Segment> dynamic_;
  std::vector<uint64_t> needed_offsets_;
  uint64_t strtab_off_ = 0, strsz_ = 0;
  std::optional<uint64_t> symtab_, hash_, gnu_hash_;
};

}  // namespace

Result<ElfDynamicInfo> parse_elf_dynamic(std::string_view bytes) {
  if (bytes.size() < EI_NIDENT) return make_error("not an ELF file: {} bytes", bytes.size());
  if (std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    return make_error("not an ELF file: bad magic");
  if (static_cast<unsigned char>(bytes[EI_DATA]) != ELFDATA2LSB)
    return make_error("big-endian ELF is not supported");
  switch (static_cast<unsigned char>(bytes[EI_CLASS])) {
    case ELFCLASS64:
      return ElfParser<true>(bytes).parse();
    case ELFCLASS32:
      return ElfParser<false>(bytes).parse();
    default:
      return make_error("unknown ELF class {}", static_cast<int>(bytes[EI_CLASS]));
  }
}

Result<ElfDynamicInfo> read_elf_dynamic(const std::filesystem::path& path) {
  STITCH_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  auto info = parse_elf_dynamic(bytes);
  if (!info.ok()) return info.error().with_context(path.string());
  return info;
}

}  // namespace stitch
