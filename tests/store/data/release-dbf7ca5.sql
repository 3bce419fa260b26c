BEGIN TRANSACTION;
CREATE TABLE agent_step (
	id INTEGER NOT NULL, 
	incident_id INTEGER NOT NULL, 
	run_id INTEGER NOT NULL, 
	"index" INTEGER NOT NULL, 
	kind VARCHAR NOT NULL, 
	description VARCHAR NOT NULL, 
	status VARCHAR NOT NULL, 
	started_at DATETIME, 
	finished_at DATETIME, 
	result JSON, 
	PRIMARY KEY (id), 
	FOREIGN KEY(incident_id) REFERENCES incident (id), 
	FOREIGN KEY(run_id) REFERENCES remediation_run (id)
);
CREATE TABLE approval (
	id VARCHAR NOT NULL, 
	incident_id INTEGER NOT NULL, 
	kind VARCHAR NOT NULL, 
	skill VARCHAR, 
	created_at DATETIME NOT NULL, 
	expires_at DATETIME NOT NULL, 
	used_at DATETIME, 
	used_by VARCHAR, 
	PRIMARY KEY (id), 
	FOREIGN KEY(incident_id) REFERENCES incident (id)
);
INSERT INTO "approval" VALUES('a1',1,'skill','web-fix','2026-12-05 09:56:04.182086','2026-12-06 09:56:04.182021',NULL,NULL);
INSERT INTO "approval" VALUES('a2',2,'skill','web-fix','2026-12-05 09:56:04.182180','2026-12-06 09:56:04.182156',NULL,NULL);
INSERT INTO "approval" VALUES('a3',3,'skill','web-fix','2026-12-05 09:56:04.182233','2026-12-06 09:56:04.182208',NULL,NULL);
INSERT INTO "approval" VALUES('a4',4,'skill','web-fix','2026-12-05 09:56:04.182280','2026-12-06 09:56:04.182262',NULL,NULL);
CREATE TABLE audit_log (
	seq INTEGER NOT NULL, 
	at DATETIME NOT NULL, 
	actor VARCHAR NOT NULL, 
	action VARCHAR NOT NULL, 
	subject VARCHAR NOT NULL, 
	data JSON, 
	prev_hash VARCHAR NOT NULL, 
	hash VARCHAR NOT NULL, 
	PRIMARY KEY (seq)
);
INSERT INTO "audit_log" VALUES(1,'2026-12-05 09:56:04.187696','guard','incident.opened','incident:1','{}','0000000000000000000000000000000000000000000000000000000000000000','81e9214fe81ac3be041aa2cbbcde07d81d86ec842e13524bb9b1189260b86c6c');
CREATE TABLE cluster_action (
	id INTEGER NOT NULL, 
	kind VARCHAR NOT NULL, 
	ref VARCHAR NOT NULL, 
	token BIGINT NOT NULL, 
	replica VARCHAR NOT NULL, 
	at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE cluster_lease (
	name VARCHAR NOT NULL, 
	holder VARCHAR NOT NULL, 
	token BIGINT NOT NULL, 
	expires_at DATETIME NOT NULL, 
	acquired_at DATETIME, 
	renewed_at DATETIME, 
	PRIMARY KEY (name)
);
CREATE TABLE cluster_replica (
	id VARCHAR NOT NULL, 
	pid INTEGER NOT NULL, 
	host VARCHAR NOT NULL, 
	role VARCHAR NOT NULL, 
	started_at DATETIME NOT NULL, 
	last_seen DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE conversation (
	id INTEGER NOT NULL, 
	chat VARCHAR NOT NULL, 
	direction VARCHAR NOT NULL, 
	author VARCHAR NOT NULL, 
	text TEXT NOT NULL, 
	incident_id INTEGER, 
	at DATETIME NOT NULL, 
	meta JSON, 
	PRIMARY KEY (id)
);
INSERT INTO "conversation" VALUES(1,'1001','out','guard','<b>#1</b> down',1,'2026-12-05 09:56:04.263871','{"outbox": 1, "method": "send", "role": "incident"}');
INSERT INTO "conversation" VALUES(2,'1001','out','guard','<b>#1</b> healed',1,'2026-12-05 09:56:04.328086','{"outbox": 2, "method": "edit", "role": "incident"}');
INSERT INTO "conversation" VALUES(3,'1001','out','guard','<b>#2</b> down',2,'2026-12-05 09:56:04.379155','{"outbox": 3, "method": "send", "role": "incident"}');
INSERT INTO "conversation" VALUES(4,'1001','out','guard','<b>#3</b> down',3,'2026-12-05 09:56:04.379901','{"outbox": 4, "method": "send", "role": "incident"}');
INSERT INTO "conversation" VALUES(5,'1001','out','guard','in flight when the release died',4,'2026-12-05 09:56:04.435774','{"outbox": 5, "method": "send", "role": "text"}');
INSERT INTO "conversation" VALUES(6,'1001','out','guard','still pending: the reply',1,'2026-12-05 09:56:04.438277','{"outbox": 6, "method": "send", "role": "reply"}');
INSERT INTO "conversation" VALUES(7,'1001','out','guard','still pending: the report',1,'2026-12-05 09:56:04.439018','{"outbox": 7, "method": "send", "role": "reply"}');
CREATE TABLE human_command (
	id INTEGER NOT NULL, 
	incident_id INTEGER NOT NULL, 
	verb VARCHAR NOT NULL, 
	skill VARCHAR, 
	fix TEXT, 
	actor VARCHAR NOT NULL, 
	channel VARCHAR NOT NULL, 
	status VARCHAR NOT NULL, 
	outcome TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	finished_at DATETIME, 
	PRIMARY KEY (id), 
	FOREIGN KEY(incident_id) REFERENCES incident (id)
);
INSERT INTO "human_command" VALUES(1,1,'approve','web-fix',NULL,'telegram:42','telegram','queued','','2026-12-05 09:56:04.182344',NULL);
CREATE TABLE incident (
	id INTEGER NOT NULL, 
	fingerprint VARCHAR NOT NULL, 
	check_key VARCHAR NOT NULL, 
	monitor_id VARCHAR NOT NULL, 
	source VARCHAR NOT NULL, 
	target VARCHAR NOT NULL, 
	kind VARCHAR NOT NULL, 
	severity VARCHAR NOT NULL, 
	title VARCHAR NOT NULL, 
	message TEXT NOT NULL, 
	state VARCHAR NOT NULL, 
	count INTEGER NOT NULL, 
	reopen_count INTEGER NOT NULL, 
	flapping BOOLEAN NOT NULL, 
	opened_at DATETIME NOT NULL, 
	first_seen DATETIME NOT NULL, 
	last_seen DATETIME NOT NULL, 
	resolved_at DATETIME, 
	details JSON, 
	PRIMARY KEY (id)
);
INSERT INTO "incident" VALUES(1,'fp1','k1','web','http','http://svc1','http_status','critical','svc1 down','svc1 answered 503','awaiting_human',0,0,0,'2026-12-05 09:56:04.115341','2026-12-05 09:56:04.115341','2026-12-05 09:56:04.115341',NULL,'{}');
INSERT INTO "incident" VALUES(2,'fp2','k2','web','http','http://svc2','http_status','critical','svc2 down','svc2 answered 503','awaiting_human',0,0,0,'2026-12-05 09:56:04.180431','2026-12-05 09:56:04.180431','2026-12-05 09:56:04.180431',NULL,'{}');
INSERT INTO "incident" VALUES(3,'fp3','k3','web','http','http://svc3','http_status','critical','svc3 down','svc3 answered 503','awaiting_human',0,0,0,'2026-12-05 09:56:04.181112','2026-12-05 09:56:04.181112','2026-12-05 09:56:04.181112',NULL,'{}');
INSERT INTO "incident" VALUES(4,'fp4','k4','web','http','http://svc4','http_status','critical','svc4 down','svc4 answered 503','awaiting_human',0,0,0,'2026-12-05 09:56:04.181692','2026-12-05 09:56:04.181692','2026-12-05 09:56:04.181692',NULL,'{}');
CREATE TABLE incident_timeline (
	id INTEGER NOT NULL, 
	incident_id INTEGER NOT NULL, 
	at DATETIME NOT NULL, 
	type VARCHAR NOT NULL, 
	from_state VARCHAR, 
	to_state VARCHAR, 
	message TEXT NOT NULL, 
	data JSON, 
	PRIMARY KEY (id), 
	FOREIGN KEY(incident_id) REFERENCES incident (id)
);
CREATE TABLE log_template (
	id INTEGER NOT NULL, 
	template TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE monitor_state (
	"key" VARCHAR NOT NULL, 
	value JSON, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY ("key")
);
INSERT INTO "monitor_state" VALUES('guard:redaction','{"ruleset": 1, "rows": 0}','2026-12-05 09:56:04.113676');
INSERT INTO "monitor_state" VALUES('telegram.top:1001','{"message_id": 2}','2026-12-05 09:56:04.432873');
CREATE TABLE mute (
	id INTEGER NOT NULL, 
	target VARCHAR NOT NULL, 
	until DATETIME NOT NULL, 
	"by" VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	cleared_at DATETIME, 
	PRIMARY KEY (id)
);
CREATE TABLE remediation_run (
	id INTEGER NOT NULL, 
	incident_id INTEGER NOT NULL, 
	skill VARCHAR NOT NULL, 
	target VARCHAR NOT NULL, 
	origin VARCHAR NOT NULL, 
	approved_by VARCHAR, 
	fix TEXT, 
	status VARCHAR NOT NULL, 
	started_at DATETIME NOT NULL, 
	finished_at DATETIME, 
	message TEXT NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(incident_id) REFERENCES incident (id)
);
CREATE TABLE skill_block (
	id INTEGER NOT NULL, 
	skill VARCHAR NOT NULL, 
	target VARCHAR NOT NULL, 
	reason VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	cleared_at DATETIME, 
	PRIMARY KEY (id)
);
CREATE TABLE telegram_group_member (
	id INTEGER NOT NULL, 
	chat_id VARCHAR NOT NULL, 
	message_id INTEGER NOT NULL, 
	incident_id INTEGER NOT NULL, 
	text TEXT NOT NULL, 
	buttons JSON, 
	live BOOLEAN NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "telegram_group_member" VALUES(1,'1001',2,2,'<b>#2</b> [critical] svc2 down · seen 0 times
<code>svc2 answered 503</code>','[[["#2 \u2716 Deny", "d2"]]]',1);
INSERT INTO "telegram_group_member" VALUES(2,'1001',2,3,'<b>#3</b> [critical] svc3 down · seen 0 times
<code>svc3 answered 503</code>','[[["#3 \u2716 Deny", "d3"]]]',1);
CREATE TABLE telegram_in_flight (
	id INTEGER NOT NULL, 
	chat_id VARCHAR NOT NULL, 
	outbox_ids JSON, 
	method VARCHAR NOT NULL, 
	text TEXT NOT NULL, 
	buttons JSON, 
	floor INTEGER NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "telegram_in_flight" VALUES(1,'1001','[5]','send','in flight when the release died','[]',2,'2026-12-05 09:56:04.437586');
CREATE TABLE telegram_message (
	id INTEGER NOT NULL, 
	chat_id VARCHAR NOT NULL, 
	message_id INTEGER NOT NULL, 
	incident_id INTEGER, 
	role VARCHAR NOT NULL, 
	live BOOLEAN NOT NULL, 
	approvals JSON, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "telegram_message" VALUES(1,'1001',1,1,'incident',0,'["a1", "d1"]','2026-12-05 09:56:04.321666');
INSERT INTO "telegram_message" VALUES(2,'1001',2,NULL,'group',1,'["d2", "d3"]','2026-12-05 09:56:04.429667');
CREATE TABLE telegram_outbox (
	id INTEGER NOT NULL, 
	method VARCHAR NOT NULL, 
	chat_id VARCHAR NOT NULL, 
	incident_id INTEGER, 
	role VARCHAR NOT NULL, 
	reply_to_incident BOOLEAN NOT NULL, 
	text TEXT NOT NULL, 
	buttons JSON, 
	photo BLOB, 
	status VARCHAR NOT NULL, 
	attempts INTEGER NOT NULL, 
	error TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	sent_at DATETIME, 
	PRIMARY KEY (id)
);
INSERT INTO "telegram_outbox" VALUES(1,'send','1001',1,'incident',0,'<b>#1</b> down','[[["\u25b6 Run web-fix", "a1"]], [["\u2716 Deny", "d1"]]]',NULL,'sent',1,'','2026-12-05 09:56:04.261755','2026-12-05 09:56:04.323455');
INSERT INTO "telegram_outbox" VALUES(2,'edit','1001',1,'incident',0,'<b>#1</b> healed','[]',NULL,'sent',1,'','2026-12-05 09:56:04.326178','2026-12-05 09:56:04.376799');
INSERT INTO "telegram_outbox" VALUES(3,'send','1001',2,'incident',0,'<b>#2</b> down','[[["\u2716 Deny", "d2"]]]',NULL,'sent',1,'','2026-12-05 09:56:04.378585','2026-12-05 09:56:04.431350');
INSERT INTO "telegram_outbox" VALUES(4,'send','1001',3,'incident',0,'<b>#3</b> down','[[["\u2716 Deny", "d3"]]]',NULL,'sent',1,'','2026-12-05 09:56:04.379551','2026-12-05 09:56:04.431950');
INSERT INTO "telegram_outbox" VALUES(5,'send','1001',4,'text',0,'in flight when the release died','[]',NULL,'in_flight',0,'','2026-12-05 09:56:04.435327',NULL);
INSERT INTO "telegram_outbox" VALUES(6,'send','1001',1,'reply',1,'still pending: the reply','[]',NULL,'pending',0,'','2026-12-05 09:56:04.437922',NULL);
INSERT INTO "telegram_outbox" VALUES(7,'send','1001',1,'reply',1,'still pending: the report','[]',NULL,'pending',0,'','2026-12-05 09:56:04.438600',NULL);
CREATE TABLE telegram_update (
	update_id INTEGER NOT NULL, 
	chat_id VARCHAR NOT NULL, 
	message_id INTEGER, 
	at DATETIME NOT NULL, 
	PRIMARY KEY (update_id)
);
INSERT INTO "telegram_update" VALUES(500,'1001',1,'2026-12-05 09:56:04.433559');
INSERT INTO "telegram_update" VALUES(501,'1001',NULL,'2026-12-05 09:56:04.434782');
CREATE TABLE trajectory (
	id INTEGER NOT NULL, 
	incident_id INTEGER NOT NULL, 
	model VARCHAR, 
	tools JSON, 
	messages JSON, 
	outcome JSON, 
	usage JSON, 
	tool_stats JSON, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(incident_id) REFERENCES incident (id)
);
CREATE INDEX ix_incident_fp_state ON incident (fingerprint, state);
CREATE INDEX ix_incident_state_id ON incident (state, id);
CREATE INDEX ix_incident_fingerprint ON incident (fingerprint);
CREATE INDEX ix_incident_resolved_at ON incident (resolved_at);
CREATE INDEX ix_incident_opened_at ON incident (opened_at);
CREATE INDEX ix_incident_check_key ON incident (check_key);
CREATE INDEX ix_incident_state ON incident (state);
CREATE INDEX ix_audit_log_at ON audit_log (at);
CREATE INDEX ix_skill_block_skill ON skill_block (skill);
CREATE INDEX ix_skill_block_target ON skill_block (target);
CREATE INDEX ix_conversation_chat ON conversation (chat);
CREATE INDEX ix_conversation_incident_id ON conversation (incident_id);
CREATE UNIQUE INDEX ix_telegram_message_chat_msg ON telegram_message (chat_id, message_id);
CREATE INDEX ix_telegram_message_incident_id ON telegram_message (incident_id);
CREATE INDEX ix_telegram_group_member_chat_id ON telegram_group_member (chat_id);
CREATE INDEX ix_telegram_group_member_incident_id ON telegram_group_member (incident_id);
CREATE INDEX ix_telegram_group_member_message_id ON telegram_group_member (message_id);
CREATE INDEX ix_telegram_outbox_incident_id ON telegram_outbox (incident_id);
CREATE INDEX ix_telegram_outbox_status ON telegram_outbox (status);
CREATE INDEX ix_telegram_in_flight_chat_id ON telegram_in_flight (chat_id);
CREATE INDEX ix_telegram_update_chat_id ON telegram_update (chat_id);
CREATE INDEX ix_telegram_update_at ON telegram_update (at);
CREATE INDEX ix_mute_target ON mute (target);
CREATE INDEX ix_cluster_action_kind ON cluster_action (kind);
CREATE INDEX ix_cluster_action_token ON cluster_action (token);
CREATE INDEX ix_incident_timeline_incident_id ON incident_timeline (incident_id);
CREATE INDEX ix_incident_timeline_at ON incident_timeline (at);
CREATE INDEX ix_remediation_run_skill ON remediation_run (skill);
CREATE INDEX ix_remediation_run_incident_id ON remediation_run (incident_id);
CREATE INDEX ix_remediation_run_target ON remediation_run (target);
CREATE INDEX ix_approval_incident_id ON approval (incident_id);
CREATE INDEX ix_human_command_status ON human_command (status);
CREATE INDEX ix_human_command_incident_id ON human_command (incident_id);
CREATE INDEX ix_trajectory_incident_id ON trajectory (incident_id);
CREATE INDEX ix_agent_step_incident_id ON agent_step (incident_id);
CREATE INDEX ix_agent_step_run_id ON agent_step (run_id);
COMMIT;
