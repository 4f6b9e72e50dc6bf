#include "util/file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "conflux/env.h"

namespace cfx::internal {

Status ErrnoStatus(int err, const std::string& what) {
  std::string message = StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return errors::NotFound(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return errors::PermissionDenied(message);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return errors::ResourceExhausted(message);
    default:
      return errors::Unavailable(message);
  }
}

StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return errors::InvalidArgument(path, ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return ErrnoStatus(errno, StrCat(path, ": cannot open"));
  std::string data;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) data.reserve(size);
  char buffer[1 << 16];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) data.append(buffer, in.gcount());
  if (in.bad()) return errors::DataLoss(path, ": read error");
  return data;
}

Status WriteStringToFile(const std::string& path, std::string_view data) {
  Env* env = Env::Default();
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(path));
  CFX_RETURN_IF_ERROR(file->Append(data));
  return file->Close();
}

}  // namespace cfx::internal
