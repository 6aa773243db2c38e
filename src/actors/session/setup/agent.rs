//! The agent brought up: its actor spawned, its process started and its bootstrap sent, at the
//! end of setup or, with replay trying steps first, when a step first needs it.

use super::*;

impl AgentSlot {
    /// Spawns the waiting agent's actor (linked to `session`'s actor) and has it start its
    /// process and send the bootstrap; a slot not waiting is left as it is.
    pub(in super::super) async fn start(
        &mut self,
        session: &Driver,
    ) -> Result<(), AgentStartFailure> {
        let nothing_sent = |ending| AgentStartFailure {
            ending,
            nothing_sent: true,
        };
        let (args, news) = match std::mem::replace(self, AgentSlot::Gone) {
            AgentSlot::Waiting { args, news } => (args, news),
            other => {
                *self = other;
                return Ok(());
            }
        };
        let (actor, _) = Actor::spawn_linked(None, AgentActor, *args, session.myself.get_cell())
            .await
            .map_err(|e| {
                nothing_sent(Ending::error(format!("cannot start the agent actor: {e}")))
            })?;
        *self = AgentSlot::Spawned {
            actor: actor.clone(),
            news,
        };
        for phase in ["start", "bootstrap"] {
            let call = async {
                if phase == "start" {
                    ractor::call!(actor, AgentMsg::Start)
                } else {
                    ractor::call!(actor, AgentMsg::Bootstrap)
                }
            };
            let failed = |ending| AgentStartFailure {
                ending,
                nothing_sent: phase == "start",
            };
            tokio::select! {
                answer = call => match answer {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return Err(failed(Ending::error(e.to_string()))),
                    Err(e) => return Err(failed(Ending::error(format!("the agent actor did not answer {phase}: {e}")))),
                },
                reason = Driver::until_stopped(session.stop.clone()) => return Err(failed(Ending::from_stop(reason))),
            }
        }
        Ok(())
    }
}

/// The agent could not be brought up; `nothing_sent`: its process never got a message (it did
/// not start at all), as opposed to dying or being stopped while it read its bootstrap.
pub(in super::super) struct AgentStartFailure {
    pub(in super::super) ending: Ending,
    pub(in super::super) nothing_sent: bool,
}
