"""Every GraphQL document Guard sends to Railway, in one place.

Field and argument names follow Railway's public schema (the CLI's introspection snapshot); the
test server validates each of these against that schema, so a typo fails the tests rather than
production. Queries select only what ``guard.railway.models`` reads.
"""

from __future__ import annotations

PROJECT_TOKEN = """
query GuardProjectToken {
  projectToken { projectId environmentId }
}
"""

PROJECT = """
query GuardProject($id: String!) {
  project(id: $id) {
    id
    name
    services { edges { node { id name } } }
    environments { edges { node { id name } } }
  }
}
"""

_DEPLOYMENT_FIELDS = "id status createdAt serviceId environmentId canRollback canRedeploy"

LATEST_DEPLOYMENT = f"""
query GuardLatestDeployment($environmentId: String!, $serviceId: String!) {{
  serviceInstance(environmentId: $environmentId, serviceId: $serviceId) {{
    latestDeployment {{ {_DEPLOYMENT_FIELDS} }}
  }}
}}
"""

DEPLOYMENTS = f"""
query GuardDeployments($input: DeploymentListInput!, $first: Int) {{
  deployments(input: $input, first: $first) {{
    edges {{ node {{ {_DEPLOYMENT_FIELDS} }} }}
  }}
}}
"""

_LOG_FIELDS = "timestamp message severity attributes { key value }"

DEPLOYMENT_LOGS = f"""
query GuardDeploymentLogs($deploymentId: String!, $startDate: DateTime, $limit: Int,
                          $filter: String) {{
  deploymentLogs(deploymentId: $deploymentId, startDate: $startDate, limit: $limit,
                 filter: $filter) {{ {_LOG_FIELDS} }}
}}
"""

BUILD_LOGS = f"""
query GuardBuildLogs($deploymentId: String!, $startDate: DateTime, $limit: Int,
                     $filter: String) {{
  buildLogs(deploymentId: $deploymentId, startDate: $startDate, limit: $limit,
            filter: $filter) {{ {_LOG_FIELDS} }}
}}
"""

DEPLOYMENT_RESTART = """
mutation GuardDeploymentRestart($id: String!) { deploymentRestart(id: $id) }
"""

DEPLOYMENT_REDEPLOY = f"""
mutation GuardDeploymentRedeploy($id: String!) {{
  deploymentRedeploy(id: $id) {{ {_DEPLOYMENT_FIELDS} }}
}}
"""

DEPLOYMENT_ROLLBACK = """
mutation GuardDeploymentRollback($id: String!) { deploymentRollback(id: $id) }
"""

SERVICE_INSTANCE_REDEPLOY = """
mutation GuardServiceInstanceRedeploy($environmentId: String!, $serviceId: String!) {
  serviceInstanceRedeploy(environmentId: $environmentId, serviceId: $serviceId)
}
"""

ALL = {
    name: value
    for name, value in dict(globals()).items()
    if name.isupper() and not name.startswith("_") and isinstance(value, str)
}
