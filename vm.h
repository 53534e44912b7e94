/* vm.h - see vm.c (qemu stream socket and vhost-user guest links). */
#ifndef FERRY_VM_H
#define FERRY_VM_H

#include <stdint.h>

struct ctx;

/* vm_start() - listen on the UNIX socket (or adopt -F fd). */
void vm_start(struct ctx *c);
/* vm_listen_handler() - a client connects to the listening socket. */
void vm_listen_handler(struct ctx *c, uint32_t events);
/* vm_stop() - remove the socket file at exit. */
void vm_stop(const struct ctx *c);
/* vm_link_closed() - the client went away. */
void vm_link_closed(struct ctx *c);

#endif /* FERRY_VM_H */
