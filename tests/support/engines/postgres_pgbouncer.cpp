#include "support/engines/postgres_pgbouncer.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "support/engines/postgres_server.hpp"
#include "support/server_port.hpp"

namespace readpast::test {
namespace {

bool accepts_connections(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

PgBouncer::PgBouncer(int postgres_port, int server_pool_size, int max_clients) {
  const char* override_path = std::getenv("READPAST_PGBOUNCER");
  const std::string binary =
      override_path != nullptr && *override_path != '\0' ? override_path : "/usr/sbin/pgbouncer";
  if (::access(binary.c_str(), X_OK) != 0) {
    throw std::runtime_error("no PgBouncer at " + binary + " (apt-get install pgbouncer)");
  }
  uid_t uid = ::geteuid();
  gid_t gid = ::getegid();
  if (uid == 0) {
    const passwd* user = ::getpwnam("postgres");
    if (user == nullptr)
      throw std::runtime_error("PgBouncer refuses root and there is no user postgres");
    uid = user->pw_uid;
    gid = user->pw_gid;
    if (::chown(dir_.path().c_str(), uid, gid) != 0) {
      throw std::system_error(errno, std::generic_category(), "chown " + dir_.path().string());
    }
  }
  port_ = free_server_port();
  const std::string config = dir_.file("pgbouncer.ini");
  {
    // Every database of the server, logged in as the client's user; trust, as the server's
    // own loopback logins are (postgres_server.hpp).
    std::ofstream out(config);
    out << "[databases]\n"
        << "* = host=127.0.0.1 port=" << postgres_port << "\n"
        << "[pgbouncer]\n"
        << "listen_addr = 127.0.0.1\n"
        << "listen_port = " << port_ << "\n"
        << "unix_socket_dir =\n"
        << "auth_type = trust\n"
        << "auth_file = " << dir_.file("users.txt") << "\n"
        << "pool_mode = transaction\n"
        << "max_client_conn = " << max_clients << "\n"
        << "default_pool_size = " << server_pool_size << "\n"
        << "server_reset_query =\n"
        << "logfile = " << dir_.file("pgbouncer.log") << "\n";
    std::ofstream users(dir_.file("users.txt"));
    users << "\"postgres\" \"\"\n";
  }
  ::chown(config.c_str(), uid, gid);
  ::chown(dir_.file("users.txt").c_str(), uid, gid);

  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid_ == 0) {
    const int null_fd = ::open("/dev/null", O_RDWR);
    ::dup2(null_fd, 0);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    if (::getuid() == 0 &&
        (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)) {
      ::_exit(126);
    }
    // After the change of user, which clears it: the pooler dies with the test program.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);
    ::execl(binary.c_str(), binary.c_str(), config.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 200; ++i) {
    if (accepts_connections(port_)) return;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("PgBouncer exited at start:\n" + log_tail());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  throw std::runtime_error("PgBouncer did not accept connections within 5 s:\n" + log_tail());
}

PgBouncer::~PgBouncer() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

PgBouncer& PgBouncer::shared() {
  static PgBouncer pooler(PostgresServer::shared().port());
  return pooler;
}

std::string PgBouncer::through(const std::string& url) const {
  // postgresql://USER@127.0.0.1:PORT/DB → the same at the pooler's port.
  const std::string server = ":" + std::to_string(PostgresServer::shared().port()) + "/";
  const auto at = url.find(server);
  if (at == std::string::npos) throw std::invalid_argument("not a test server URL: " + url);
  std::string result = url;
  result.replace(at, server.size(), ":" + std::to_string(port_) + "/");
  return result;
}

std::string PgBouncer::log_tail() const {
  std::ifstream in(dir_.file("pgbouncer.log"));
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
}

}  // namespace readpast::test
