//! The servers' other features across the set: resources, resource templates and prompts listed
//! from every server at once, each item with the server it came from; a read, a prompt or a
//! completion routed to its server.
//!
//! Names: a prompt is named as a tool is, `server__prompt` under the set's [`NameRules`]
//! ([`plan_prompts`]), and got by that name; a resource keeps its URI (a URI is what a server
//! reads, and renaming it would break the links that name it), and is read from the server
//! named, else from the one server that lists it ([`resource_owner`]). A completion names its
//! server, or a prompt by its set name.
//!
//! A listing asks every server at once. A server that does not declare the feature offers
//! nothing and is no failure; one that is down, or whose listing fails, is reported in
//! [`SetListing::failed`] and the others are listed, as a failed server's tools are left out.
//! New features (skills) list through the same seam ([`ServerSet::across`]).
//!
//! [`NameRules`]: mcp_proto::server_set::NameRules

use super::{Inner, ServerSet, SetError};
use crate::sync::lock;
use crate::{Client, Error};
use mcp_proto::prompts::CompletionRef;
use mcp_proto::server_set::{plan_prompts, resource_owner, Plan, ResourceOwner};
use mcp_proto::{
    Completion, GetPromptResult, Prompt, ReadResourceResult, RequestError, Resource,
    ResourceTemplate,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

/// An item of a listing across the set, with the server it came from.
#[derive(Debug, Clone)]
pub struct FromServer<T> {
    /// The server's name.
    pub server: String,
    /// The item, as that server sent it.
    pub item: T,
}

/// A prompt of the set: the name it is got by, its server, and the prompt as the server sent
/// it (its own name is [`Prompt::name`]).
#[derive(Debug, Clone)]
pub struct SetPrompt {
    /// Its name in the set (`server__prompt` by default).
    pub name: String,
    /// The server it goes to.
    pub server: String,
    /// The prompt, as its server listed it.
    pub prompt: Prompt,
}

/// A listing across the set: the items, in server order then each server's order, and the
/// servers that could not be listed ([`SetError::Down`] or [`SetError::Server`], in server
/// order).
#[derive(Debug, Clone)]
pub struct SetListing<T> {
    /// What the servers listed.
    pub items: Vec<T>,
    /// The servers that failed, each with why.
    pub failed: Vec<SetError>,
}

/// Whether a listing's failure means only that the server does not offer the feature.
fn not_offered(e: &Error) -> bool {
    matches!(e, Error::Request(RequestError::NotOffered { .. }))
}

impl ServerSet {
    /// The running client of server `name`, started again when it exited (as a call to it
    /// would): for what the set does not wrap (a subscription, a feature of one server).
    pub async fn client(&self, name: &str) -> Result<Client, SetError> {
        let Some(i) = self.inner.slots.iter().position(|s| s.spec.name == name) else {
            return Err(SetError::UnknownServer(name.to_owned()));
        };
        self.inner.client(i).await
    }

    /// Runs `list` on every server at once: each server's items, in server order, and the
    /// servers that failed (down, or the listing failed; a server that does not offer what is
    /// listed — [`RequestError::NotOffered`] — offers nothing, and is no failure). The seam
    /// every listing across the set goes through.
    pub async fn across<T, F, Fut>(&self, list: F) -> SetListing<FromServer<T>>
    where
        T: Send + 'static,
        F: Fn(Client) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = Result<Vec<T>, Error>> + Send + 'static,
    {
        let tasks: Vec<_> = (0..self.inner.slots.len())
            .map(|i| {
                let inner = self.inner.clone();
                let list = list.clone();
                smol::spawn(async move {
                    let client = inner.client(i).await?;
                    list(client).await.map_err(|cause| SetError::Server {
                        server: inner.slots[i].spec.name.clone(),
                        cause,
                    })
                })
            })
            .collect();
        let mut out = SetListing {
            items: Vec::new(),
            failed: Vec::new(),
        };
        for (i, task) in tasks.into_iter().enumerate() {
            let server = &self.inner.slots[i].spec.name;
            match task.await {
                Ok(items) => out.items.extend(items.into_iter().map(|item| FromServer {
                    server: server.clone(),
                    item,
                })),
                Err(SetError::Server { cause, .. }) if not_offered(&cause) => {}
                Err(e) => out.failed.push(e),
            }
        }
        out
    }

    /// Every server's resources (`resources/list`, each server's pages followed).
    pub async fn list_resources(&self) -> SetListing<FromServer<Resource>> {
        self.across(|client: Client| async move { client.list_resources().await })
            .await
    }

    /// Every server's resource templates (`resources/templates/list`).
    pub async fn list_resource_templates(&self) -> SetListing<FromServer<ResourceTemplate>> {
        self.across(|client: Client| async move { client.list_resource_templates().await })
            .await
    }

    /// Every server's prompts (`prompts/list`), under their names in the set; the routing of
    /// [`get_prompt`](Self::get_prompt) is planned from this listing.
    pub async fn list_prompts(&self) -> SetListing<SetPrompt> {
        let listed = self
            .across(|client: Client| async move { client.list_prompts().await })
            .await;
        let plan = self.inner.plan_prompts(&listed.items);
        // Each server's prompts by name (the first of a name a server repeats, as the plan).
        let mut by_name: HashMap<(&str, &str), &Prompt> = HashMap::new();
        for p in &listed.items {
            by_name
                .entry((p.server.as_str(), p.item.name.as_str()))
                .or_insert(&p.item);
        }
        let items = plan
            .routes
            .iter()
            .filter_map(|route| {
                let server = &self.inner.slots[route.server].spec.name;
                let prompt = by_name.get(&(server.as_str(), route.tool.as_str()))?;
                Some(SetPrompt {
                    name: route.exposed.clone(),
                    server: server.clone(),
                    prompt: (*prompt).clone(),
                })
            })
            .collect();
        SetListing {
            items,
            failed: listed.failed,
        }
    }

    /// The server and the prompt's own name of prompt `name` (its name in the set): from the
    /// last [`list_prompts`](Self::list_prompts), else the servers' prompts are listed first.
    pub async fn prompt_route(&self, name: &str) -> Result<(String, String), SetError> {
        let route = |plan: &Plan| {
            plan.route(name)
                .map(|r| (self.inner.slots[r.server].spec.name.clone(), r.tool.clone()))
        };
        let known = route(&lock(&self.inner.prompts));
        let found = match known {
            Some(found) => Some(found),
            None => {
                self.list_prompts().await;
                route(&lock(&self.inner.prompts))
            }
        };
        found.ok_or_else(|| SetError::UnknownPrompt(name.to_owned()))
    }

    /// Prompt `name` (its name in the set, `server__prompt`) filled in with `arguments`
    /// (`prompts/get` to its server, with the prompt's own name).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<GetPromptResult, SetError> {
        let (server, prompt) = self.prompt_route(name).await?;
        self.on(&server, |c| async move {
            c.get_prompt(&prompt, arguments).await
        })
        .await
    }

    /// Reads `uri` (`resources/read`) from `server` when given, else from the server that lists
    /// it (see [`resource_owner`]: the servers' resources are listed first, when the set has
    /// more than one); a URI no server lists, or several do, fails with
    /// [`SetError::UnknownResource`], naming the servers that list it.
    pub async fn read_resource(
        &self,
        server: Option<&str>,
        uri: &str,
    ) -> Result<FromServer<ReadResourceResult>, SetError> {
        let server = match server {
            Some(server) => server.to_owned(),
            None => self.resource_server(uri).await?,
        };
        let read = self
            .on(&server, |c| async move { c.read_resource(uri).await })
            .await?;
        Ok(FromServer { server, item: read })
    }

    /// The server that reads `uri` when none is named, as [`read_resource`](Self::read_resource)
    /// finds it: the set's only server, else the one that lists it (the servers' resources
    /// are listed), else [`SetError::UnknownResource`].
    pub async fn resource_server(&self, uri: &str) -> Result<String, SetError> {
        let names = self.server_names();
        if let [only] = &names[..] {
            return Ok((*only).to_owned());
        }
        let listed = self.list_resources().await;
        let uris: Vec<Vec<&str>> = names
            .iter()
            .map(|name| {
                listed
                    .items
                    .iter()
                    .filter(|r| r.server == *name)
                    .map(|r| r.item.uri.as_str())
                    .collect()
            })
            .collect();
        let uris: Vec<&[&str]> = uris.iter().map(Vec::as_slice).collect();
        let servers = match resource_owner(uri, &uris) {
            ResourceOwner::Server(i) => return Ok(names[i].to_owned()),
            ResourceOwner::Unlisted => Vec::new(),
            ResourceOwner::Several(several) => {
                several.iter().map(|&i| names[i].to_owned()).collect()
            }
        };
        Err(SetError::UnknownResource {
            uri: uri.to_owned(),
            servers,
        })
    }

    /// Suggestions for an argument (`completion/complete`) from `server`.
    pub async fn complete(
        &self,
        server: &str,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &Map<String, Value>,
    ) -> Result<Completion, SetError> {
        self.on(server, |c| async move {
            c.complete(reference, argument, value, context).await
        })
        .await
    }

    /// `f` on server `server`'s running client; its failure as the server's.
    async fn on<'a, T, Fut>(
        &self,
        server: &str,
        f: impl FnOnce(Client) -> Fut,
    ) -> Result<T, SetError>
    where
        Fut: Future<Output = Result<T, Error>> + 'a,
    {
        let client = self.client(server).await?;
        f(client).await.map_err(|cause| SetError::Server {
            server: server.to_owned(),
            cause,
        })
    }
}

impl Inner {
    /// Plans the prompts' names from a listing and keeps the plan for
    /// [`ServerSet::prompt_route`].
    fn plan_prompts(&self, listed: &[FromServer<Prompt>]) -> Arc<Plan> {
        let names: Vec<Vec<String>> = self
            .slots
            .iter()
            .map(|slot| {
                listed
                    .iter()
                    .filter(|p| p.server == slot.spec.name)
                    .map(|p| p.item.name.clone())
                    .collect()
            })
            .collect();
        let servers: Vec<(&str, &[String])> = self
            .slots
            .iter()
            .zip(&names)
            .map(|(slot, names)| (slot.spec.name.as_str(), names.as_slice()))
            .collect();
        let plan = Arc::new(plan_prompts(&servers, &self.config.names));
        *lock(&self.prompts) = plan.clone();
        plan
    }
}
