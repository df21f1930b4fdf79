#pragma once

#include <caf/atom.hpp>

/// The verbs of the actor protocol. Each atom's text is at most 10 characters and clashes with none of
/// CAF's built-in atoms.
namespace cdui::atoms {

using submit = caf::atom_constant<caf::atom("cd_submit")>;
using grant = caf::atom_constant<caf::atom("cd_grant")>;
using append = caf::atom_constant<caf::atom("cd_append")>;
using finished = caf::atom_constant<caf::atom("cd_finish")>;
using cancel = caf::atom_constant<caf::atom("cd_cancel")>;
using events = caf::atom_constant<caf::atom("cd_events")>;
using wait = caf::atom_constant<caf::atom("cd_wait")>;
using info = caf::atom_constant<caf::atom("cd_info")>;
using list = caf::atom_constant<caf::atom("cd_list")>;
using timeout = caf::atom_constant<caf::atom("cd_timeout")>;
using ended = caf::atom_constant<caf::atom("cd_ended")>;
/// ddp part -> its run (part_ended, worker, outcome): a worker's part of a DDP run across workers ended.
using part_ended = caf::atom_constant<caf::atom("cd_partend")>;
using interrupt = caf::atom_constant<caf::atom("cd_intr")>;
using status = caf::atom_constant<caf::atom("cd_status")>;
using quit = caf::atom_constant<caf::atom("cd_quit")>;
using erase = caf::atom_constant<caf::atom("cd_erase")>;
using flush = caf::atom_constant<caf::atom("cd_flush")>;
using shutdown = caf::atom_constant<caf::atom("cd_shutdn")>;
using put = caf::atom_constant<caf::atom("cd_put")>;
using get = caf::atom_constant<caf::atom("cd_get")>;
using drop = caf::atom_constant<caf::atom("cd_drop")>;
using wire_in = caf::atom_constant<caf::atom("cd_wirein")>;
using tick = caf::atom_constant<caf::atom("cd_tick")>;
using attach = caf::atom_constant<caf::atom("cd_attach")>;
using adopt = caf::atom_constant<caf::atom("cd_adopt")>;
using place = caf::atom_constant<caf::atom("cd_place")>;
using worker_update = caf::atom_constant<caf::atom("cd_wupdate")>;
using assign = caf::atom_constant<caf::atom("cd_assign")>;
using stop = caf::atom_constant<caf::atom("cd_stop")>;
using drain = caf::atom_constant<caf::atom("cd_drain")>;
using enroll = caf::atom_constant<caf::atom("cd_enroll")>;
using rekey = caf::atom_constant<caf::atom("cd_rekey")>;
using remove = caf::atom_constant<caf::atom("cd_remove")>;
using worker_gone = caf::atom_constant<caf::atom("cd_wgone")>;
using outputs = caf::atom_constant<caf::atom("cd_outputs")>;
using deadline = caf::atom_constant<caf::atom("cd_dline")>;
/// A sweep submitted to the run queue (all its runs or none).
using sweep = caf::atom_constant<caf::atom("cd_sweep")>;
/// A study's trial submitted to the run queue (its run recorded with the trial).
using trial = caf::atom_constant<caf::atom("cd_trial")>;
/// The worker registry and its worker actors (actors/server/worker_proxy.hpp):
/// registry -> worker (join, identity, hello, enrolled, draining): an accepted hello;
/// worker -> registry (worker_lost, name, identity): its heartbeats stopped, the connection is gone;
/// worker -> registry (released, run id, worker): the worker no longer follows the run (it ended);
/// anyone -> registry (proxy_of, name) -> the worker's actor, an invalid handle when it has none.
using worker_lost = caf::atom_constant<caf::atom("cd_wlost")>;
using released = caf::atom_constant<caf::atom("cd_wrelsd")>;
using proxy_of = caf::atom_constant<caf::atom("cd_wproxy")>;
using join = caf::atom_constant<caf::atom("cd_wjoin")>;
/// The memory ledger and its device slots (actors/server/memory_ledger.hpp): share (a card turns
/// Shared by memory or back), ask (a run's budget judged), reserve (a slot's part of it), report
/// (a card's total and free), started (a granted run started), memory_freed (room on a card), hold
/// (a run without a budget keeps a card that turned shared),
/// budget (a queued run's memory budget was given or raised), context (a run measured a card's CUDA
/// context).
using share = caf::atom_constant<caf::atom("cd_share")>;
using ask = caf::atom_constant<caf::atom("cd_ask")>;
using reserve = caf::atom_constant<caf::atom("cd_reserve")>;
using report = caf::atom_constant<caf::atom("cd_report")>;
using started = caf::atom_constant<caf::atom("cd_started")>;
using memory_freed = caf::atom_constant<caf::atom("cd_memfree")>;
using hold = caf::atom_constant<caf::atom("cd_hold")>;
using budget = caf::atom_constant<caf::atom("cd_budget")>;
using context = caf::atom_constant<caf::atom("cd_context")>;

} // namespace cdui::atoms
