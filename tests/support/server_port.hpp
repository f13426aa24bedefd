// A TCP port of 127.0.0.1 for a test's database server or pooler.
#pragma once

namespace readpast::test {

// A port that was free a moment ago, chosen below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range): a client socket of any test never takes it, so a server
// restarted on the same port (a crash test) can always bind it again. Another program may
// still take it between this call and the server's bind: callers try a few.
int free_server_port();

}  // namespace readpast::test
