// ELF parsing for the library audit, written against <elf.h>. Little-endian ELF32 and ELF64.
// Offsets and sizes come from the file and are never trusted: every access goes through
// ByteView::read, which checks bounds with overflow-safe arithmetic.
#include "verify/checks/elf_reader.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>
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
  static unsigned char type(unsigned char info) { return ELF64_ST_TYPE(info); }
  using Rela = std::conditional_t<Is64, Elf64_Rela, Elf32_Rela>;
  using Rel = std::conditional_t<Is64, Elf64_Rel, Elf32_Rel>;
  static uint64_t rel_symbol(uint64_t info) { return Is64 ? info >> 32 : info >> 8; }
  static uint32_t rel_type(uint64_t info) {
    return static_cast<uint32_t>(Is64 ? info & 0xffffffffu : info & 0xffu);
  }
};

constexpr uint64_t kMaxRelocations = 1u << 22;
constexpr uint64_t kMaxHookSlots = 1u << 12;

// Relocations that run an ifunc resolver at load: x86-64, i386 and AArch64 R_*_IRELATIVE.
bool is_irelative(uint16_t machine, uint32_t type) {
  return (machine == EM_X86_64 && type == R_X86_64_IRELATIVE) ||
         (machine == EM_386 && type == R_386_IRELATIVE) ||
         (machine == EM_AARCH64 && type == R_AARCH64_IRELATIVE);
}

// One relocation as the loader applies it: where, which symbol (0: none) and the addend (for REL,
// what the slot holds).
struct Relocation {
  uint32_t type = 0;
  uint64_t symbol = 0;
  uint64_t addend = 0;
  bool explicit_addend = false;
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
    machine_ = eh.e_machine;
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
    info.exported_functions.assign(exported_functions_.begin(), exported_functions_.end());
    read_function_names(eh);
    read_load_hooks(info.load_hooks);
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
        case DT_INIT:
        case DT_FINI:
        case DT_INIT_ARRAY:
        case DT_INIT_ARRAYSZ:
        case DT_FINI_ARRAY:
        case DT_FINI_ARRAYSZ:
        case DT_PREINIT_ARRAY:
        case DT_PREINIT_ARRAYSZ:
        case DT_RELA:
        case DT_RELASZ:
        case DT_REL:
        case DT_RELSZ:
          tags_[d.d_tag] = value;
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
                      std::set<std::string>& imported, std::set<std::string>& exported) {
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
        if (vis != STV_DEFAULT && vis != STV_PROTECTED) continue;
        if (bind == STB_GLOBAL && T::type(sym.st_info) == STT_FUNC) exported_functions_.insert(*name);
        exported.insert(std::move(*name));
      }
    }
    return {};
  }

  void read_section_dynsym(const typename T::Ehdr& eh, std::set<std::string>& imported,
                           std::set<std::string>& exported) {
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

  std::optional<uint64_t> tag(int64_t key) const {
    auto it = tags_.find(key);
    return it == tags_.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  }

  // Address -> name of every defined function, from .symtab first (local functions such as
  // frame_dummy live only there), then .dynsym.
  void read_function_names(const typename T::Ehdr& eh) {
    if (eh.e_shnum == 0 || eh.e_shentsize < sizeof(typename T::Shdr)) return;
    for (uint32_t kind : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
      for (uint64_t i = 0; i < eh.e_shnum; ++i) {
        typename T::Shdr sh, strings;
        if (!v_.read(eh.e_shoff + i * eh.e_shentsize, sh)) return;
        if (sh.sh_type != kind || sh.sh_entsize != sizeof(typename T::Sym)) continue;
        if (sh.sh_link >= eh.e_shnum ||
            !v_.read(eh.e_shoff + uint64_t{sh.sh_link} * eh.e_shentsize, strings) ||
            !v_.has(sh.sh_offset, sh.sh_size) || !v_.has(strings.sh_offset, strings.sh_size))
          continue;
        const uint64_t count = std::min<uint64_t>(sh.sh_size / sizeof(typename T::Sym), kMaxSymbols);
        for (uint64_t k = 1; k < count; ++k) {
          typename T::Sym sym;
          if (!v_.read(sh.sh_offset + k * sizeof(sym), sym)) break;
          const unsigned char type = T::type(sym.st_info);
          if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0 ||
              (type != STT_FUNC && type != STT_GNU_IFUNC))
            continue;
          auto name = v_.c_string(strings.sh_offset + sym.st_name,
                                  strings.sh_offset + strings.sh_size);
          if (name && !name->empty()) function_names_.emplace(sym.st_value, std::move(*name));
        }
      }
    }
  }

  std::string dynamic_symbol_name(uint64_t index) const {
    if (!symtab_ || index == 0 || index >= kMaxSymbols) return {};
    typename T::Sym sym;
    if (!v_.read(*symtab_ + index * sizeof(sym), sym)) return {};
    auto name = v_.c_string(strtab_off_ + sym.st_name, strtab_off_ + strsz_);
    return name ? *name : std::string();
  }

  template <typename Entry>
  void read_relocation_table(int64_t address_tag, int64_t size_tag, bool explicit_addend,
                             std::map<uint64_t, Relocation>& out) const {
    auto address = tag(address_tag), size = tag(size_tag);
    if (!address || !size) return;
    auto offset = to_offset(*address);
    if (!offset) return;
    const uint64_t count = std::min<uint64_t>(*size / sizeof(Entry), kMaxRelocations);
    for (uint64_t i = 0; i < count; ++i) {
      Entry e;
      if (!v_.read(*offset + i * sizeof(e), e)) return;
      Relocation r{T::rel_type(e.r_info), T::rel_symbol(e.r_info), 0, explicit_addend};
      if constexpr (std::is_same_v<Entry, typename T::Rela>)
        r.addend = static_cast<uint64_t>(e.r_addend);
      out.emplace(e.r_offset, r);
    }
  }

  std::string function_at(uint64_t address) const {
    auto it = function_names_.find(address);
    return it == function_names_.end() ? std::string() : it->second;
  }

  // The function an init/fini slot at `slot` calls: through its relocation when it has one.
  ElfLoadHook slot_hook(const std::string& table, uint64_t slot,
                        const std::map<uint64_t, Relocation>& relocations) const {
    ElfLoadHook hook{table, 0, {}};
    typename T::Word in_file = 0;
    if (auto off = to_offset(slot)) v_.read(*off, in_file);
    hook.address = in_file;
    if (auto it = relocations.find(slot); it != relocations.end()) {
      const Relocation& r = it->second;
      if (r.symbol != 0) {
        hook.symbol = dynamic_symbol_name(r.symbol);
        return hook;
      }
      if (r.explicit_addend) hook.address = r.addend;
    }
    hook.symbol = function_at(hook.address);
    return hook;
  }

  void read_load_hooks(std::vector<ElfLoadHook>& hooks) const {
    std::map<uint64_t, Relocation> relocations;
    read_relocation_table<typename T::Rela>(DT_RELA, DT_RELASZ, true, relocations);
    read_relocation_table<typename T::Rel>(DT_REL, DT_RELSZ, false, relocations);
    if (auto init = tag(DT_INIT)) hooks.push_back({"DT_INIT", *init, function_at(*init)});
    struct Table {
      const char* name;
      int64_t address, size;
    };
    for (const Table& table : {Table{"DT_PREINIT_ARRAY", DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ},
                               Table{"DT_INIT_ARRAY", DT_INIT_ARRAY, DT_INIT_ARRAYSZ},
                               Table{"DT_FINI_ARRAY", DT_FINI_ARRAY, DT_FINI_ARRAYSZ}}) {
      auto address = tag(table.address), size = tag(table.size);
      if (!address || !size) continue;
      const uint64_t slots = std::min<uint64_t>(*size / sizeof(typename T::Word), kMaxHookSlots);
      for (uint64_t k = 0; k < slots; ++k)
        hooks.push_back(slot_hook(table.name, *address + k * sizeof(typename T::Word), relocations));
    }
    if (auto fini = tag(DT_FINI)) hooks.push_back({"DT_FINI", *fini, function_at(*fini)});
    for (const auto& [slot, r] : relocations)
      if (is_irelative(machine_, r.type))
        hooks.push_back({"IRELATIVE", r.addend, function_at(r.addend)});
  }

  ByteView v_;
  uint16_t machine_ = 0;
  std::map<int64_t, uint64_t> tags_;
  std::set<std::string> exported_functions_;
  std::map<uint64_t, std::string> function_names_;
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
