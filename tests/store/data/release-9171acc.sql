BEGIN TRANSACTION;
CREATE TABLE access_token (
	id INTEGER NOT NULL, 
	name VARCHAR NOT NULL, 
	role VARCHAR NOT NULL, 
	digest VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	revoked_at DATETIME, 
	last_used_at DATETIME, 
	PRIMARY KEY (id), 
	UNIQUE (name), 
	UNIQUE (digest)
);
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
CREATE TABLE channel_message (
	id INTEGER NOT NULL, 
	channel VARCHAR NOT NULL, 
	chat_id VARCHAR NOT NULL, 
	message_id INTEGER NOT NULL, 
	incident_id INTEGER, 
	role VARCHAR NOT NULL, 
	live BOOLEAN NOT NULL, 
	approvals JSON, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "channel_message" VALUES(1,'telegram','1001',1,1,'incident',0,'["a1", "d1"]','2026-12-06 16:02:38.863470');
INSERT INTO "channel_message" VALUES(2,'telegram','1001',2,NULL,'group',1,'["d2", "d3"]','2026-12-06 16:02:39.158990');
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
INSERT INTO "conversation" VALUES(1,'1001','out','guard','<b>#1</b> down',1,'2026-12-06 16:02:38.694583','{"outbox": 1, "method": "send", "role": "incident"}');
INSERT INTO "conversation" VALUES(2,'1001','out','guard','<b>#1</b> healed',1,'2026-12-06 16:02:38.942967','{"outbox": 2, "method": "edit", "role": "incident"}');
INSERT INTO "conversation" VALUES(3,'1001','out','guard','<b>#2</b> down',2,'2026-12-06 16:02:39.032727','{"outbox": 3, "method": "send", "role": "incident"}');
INSERT INTO "conversation" VALUES(4,'1001','out','guard','<b>#3</b> down',3,'2026-12-06 16:02:39.034147','{"outbox": 4, "method": "send", "role": "incident"}');
INSERT INTO "conversation" VALUES(5,'1001','out','guard','in flight when the release died',4,'2026-12-06 16:02:39.247768','{"outbox": 5, "method": "send", "role": "text"}');
INSERT INTO "conversation" VALUES(6,'1001','out','guard','still pending: the reply',1,'2026-12-06 16:02:39.303978','{"outbox": 6, "method": "send", "role": "reply"}');
INSERT INTO "conversation" VALUES(7,'1001','out','guard','still pending: the report',1,'2026-12-06 16:02:39.305246','{"outbox": 7, "method": "send", "role": "reply"}');
CREATE TABLE correlation_split (
	id INTEGER NOT NULL, 
	root_monitor VARCHAR NOT NULL, 
	root_fingerprint VARCHAR NOT NULL, 
	monitor_id VARCHAR NOT NULL, 
	fingerprint VARCHAR NOT NULL, 
	incident_id INTEGER, 
	"by" VARCHAR NOT NULL, 
	at DATETIME, 
	PRIMARY KEY (id)
);
CREATE TABLE escalation_fired (
	id INTEGER NOT NULL, 
	incident_id INTEGER NOT NULL, 
	episode INTEGER NOT NULL, 
	kind VARCHAR NOT NULL, 
	number INTEGER NOT NULL, 
	at DATETIME NOT NULL, 
	data JSON, 
	PRIMARY KEY (id), 
	UNIQUE (incident_id, episode, kind, number)
);
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
CREATE TABLE in_flight (
	id INTEGER NOT NULL, 
	channel VARCHAR NOT NULL, 
	chat_id VARCHAR NOT NULL, 
	outbox_ids JSON, 
	method VARCHAR NOT NULL, 
	text TEXT NOT NULL, 
	buttons JSON, 
	floor INTEGER NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "in_flight" VALUES(1,'telegram','1001','[5]','send','in flight when the release died','[]',2,'2026-12-06 16:02:39.283452');
CREATE TABLE inbound_update (
	channel VARCHAR NOT NULL, 
	update_id INTEGER NOT NULL, 
	chat_id VARCHAR NOT NULL, 
	message_id INTEGER, 
	at DATETIME NOT NULL, 
	PRIMARY KEY (channel, update_id)
);
INSERT INTO "inbound_update" VALUES('telegram',500,'1001',1,'2026-12-06 16:02:39.227711');
INSERT INTO "inbound_update" VALUES('telegram',501,'1001',NULL,'2026-12-06 16:02:39.246233');
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
INSERT INTO "incident" VALUES(1,'fp1','k1','web','http','http://svc1','http_status','critical','svc1 down','svc1 answered 503','awaiting_human',0,0,0,'2026-12-06 16:02:36.919832','2026-12-06 16:02:36.919832','2026-12-06 16:02:36.919832',NULL,'{}');
INSERT INTO "incident" VALUES(2,'fp2','k2','web','http','http://svc2','http_status','critical','svc2 down','svc2 answered 503','awaiting_human',0,0,0,'2026-12-06 16:02:37.432729','2026-12-06 16:02:37.432729','2026-12-06 16:02:37.432729',NULL,'{}');
INSERT INTO "incident" VALUES(3,'fp3','k3','web','http','http://svc3','http_status','critical','svc3 down','svc3 answered 503','awaiting_human',0,0,0,'2026-12-06 16:02:37.433714','2026-12-06 16:02:37.433714','2026-12-06 16:02:37.433714',NULL,'{}');
INSERT INTO "incident" VALUES(4,'fp4','k4','web','http','http://svc4','http_status','critical','svc4 down','svc4 answered 503','awaiting_human',0,0,0,'2026-12-06 16:02:37.434196','2026-12-06 16:02:37.434196','2026-12-06 16:02:37.434196',NULL,'{}');
CREATE TABLE incident_ack (
	incident_id INTEGER NOT NULL, 
	episode INTEGER NOT NULL, 
	"by" VARCHAR NOT NULL, 
	channel VARCHAR NOT NULL, 
	at DATETIME NOT NULL, 
	PRIMARY KEY (incident_id, episode)
);
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
CREATE TABLE message_group_member (
	id INTEGER NOT NULL, 
	channel VARCHAR NOT NULL, 
	chat_id VARCHAR NOT NULL, 
	message_id INTEGER NOT NULL, 
	incident_id INTEGER NOT NULL, 
	text TEXT NOT NULL, 
	buttons JSON, 
	live BOOLEAN NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "message_group_member" VALUES(1,'telegram','1001',2,2,'<b>#2</b> [critical] svc2 down · seen 0 times
<code>svc2 answered 503</code>','[[["#2 \u2716 Deny", "d2"]]]',1);
INSERT INTO "message_group_member" VALUES(2,'telegram','1001',2,3,'<b>#3</b> [critical] svc3 down · seen 0 times
<code>svc3 answered 503</code>','[[["#3 \u2716 Deny", "d3"]]]',1);
CREATE TABLE monitor_state (
	"key" VARCHAR NOT NULL, 
	value JSON, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY ("key")
);
INSERT INTO "monitor_state" VALUES('guard:redaction','{"ruleset": 1, "rows": 0}','2026-12-06 16:02:36.918004');
INSERT INTO "monitor_state" VALUES('telegram.top:1001','{"message_id": 2}','2026-12-06 16:02:39.226686');
CREATE TABLE mute (
	id INTEGER NOT NULL, 
	target VARCHAR NOT NULL, 
	until DATETIME NOT NULL, 
	"by" VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	cleared_at DATETIME, 
	PRIMARY KEY (id)
);
CREATE TABLE outbox (
	id INTEGER NOT NULL, 
	channel VARCHAR NOT NULL, 
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
INSERT INTO "outbox" VALUES(1,'telegram','send','1001',1,'incident',0,'<b>#1</b> down','[[["\u25b6 Run web-fix", "a1"]], [["\u2716 Deny", "d1"]]]',NULL,'sent',1,'','2026-12-06 16:02:38.663154','2026-12-06 16:02:38.897388');
INSERT INTO "outbox" VALUES(2,'telegram','edit','1001',1,'incident',0,'<b>#1</b> healed','[]',NULL,'sent',1,'','2026-12-06 16:02:38.900288','2026-12-06 16:02:38.998017');
INSERT INTO "outbox" VALUES(3,'telegram','send','1001',2,'incident',0,'<b>#2</b> down','[[["\u2716 Deny", "d2"]]]',NULL,'sent',1,'','2026-12-06 16:02:38.999825','2026-12-06 16:02:39.204030');
INSERT INTO "outbox" VALUES(4,'telegram','send','1001',3,'incident',0,'<b>#3</b> down','[[["\u2716 Deny", "d3"]]]',NULL,'sent',1,'','2026-12-06 16:02:39.033522','2026-12-06 16:02:39.225237');
INSERT INTO "outbox" VALUES(5,'telegram','send','1001',4,'text',0,'in flight when the release died','[]',NULL,'in_flight',0,'','2026-12-06 16:02:39.247098',NULL);
INSERT INTO "outbox" VALUES(6,'telegram','send','1001',1,'reply',1,'still pending: the reply','[]',NULL,'pending',0,'','2026-12-06 16:02:39.283980',NULL);
INSERT INTO "outbox" VALUES(7,'telegram','send','1001',1,'reply',1,'still pending: the report','[]',NULL,'pending',0,'','2026-12-06 16:02:39.304685',NULL);
CREATE TABLE page_outbox (
	id INTEGER NOT NULL, 
	target VARCHAR NOT NULL, 
	"key" VARCHAR NOT NULL, 
	incident_id INTEGER NOT NULL, 
	action VARCHAR NOT NULL, 
	reason VARCHAR NOT NULL, 
	delivery VARCHAR NOT NULL, 
	payload JSON, 
	status VARCHAR NOT NULL, 
	attempts INTEGER NOT NULL, 
	next_at DATETIME, 
	error TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	sent_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_page_outbox_target_key UNIQUE (target, "key")
);
CREATE TABLE quiet_held (
	id INTEGER NOT NULL, 
	incident_id INTEGER NOT NULL, 
	request JSON, 
	held_at DATETIME NOT NULL, 
	until DATETIME NOT NULL, 
	outbox_floor INTEGER NOT NULL, 
	released_at DATETIME, 
	outcome VARCHAR NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE related_signal (
	id INTEGER NOT NULL, 
	incident_id INTEGER NOT NULL, 
	fingerprint VARCHAR NOT NULL, 
	check_key VARCHAR NOT NULL, 
	monitor_id VARCHAR NOT NULL, 
	service VARCHAR, 
	source VARCHAR NOT NULL, 
	target VARCHAR NOT NULL, 
	kind VARCHAR NOT NULL, 
	severity VARCHAR NOT NULL, 
	message TEXT NOT NULL, 
	count INTEGER NOT NULL, 
	status VARCHAR NOT NULL, 
	first_seen DATETIME NOT NULL, 
	last_seen DATETIME NOT NULL, 
	joined_at DATETIME NOT NULL, 
	details JSON, 
	PRIMARY KEY (id), 
	FOREIGN KEY(incident_id) REFERENCES incident (id)
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
CREATE TABLE remedy_hold (
	id INTEGER NOT NULL, 
	incident_id INTEGER NOT NULL, 
	run_id INTEGER, 
	target VARCHAR NOT NULL, 
	service VARCHAR, 
	services JSON, 
	action VARCHAR NOT NULL, 
	explains JSON, 
	started_at DATETIME NOT NULL, 
	acted_at DATETIME, 
	ends_at DATETIME, 
	closed_at DATETIME, 
	settle FLOAT NOT NULL, 
	effects INTEGER NOT NULL, 
	details JSON, 
	PRIMARY KEY (id), 
	FOREIGN KEY(incident_id) REFERENCES incident (id)
);
CREATE TABLE silence (
	id INTEGER NOT NULL, 
	matchers JSON, 
	expires_at DATETIME NOT NULL, 
	"by" VARCHAR NOT NULL, 
	comment VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	cleared_at DATETIME, 
	PRIMARY KEY (id)
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
CREATE TABLE skill_ladder (
	id INTEGER NOT NULL, 
	skill VARCHAR NOT NULL, 
	step VARCHAR NOT NULL, 
	reason TEXT NOT NULL, 
	runs JSON, 
	at DATETIME NOT NULL, 
	closed_at DATETIME, 
	outcome VARCHAR NOT NULL, 
	details JSON, 
	PRIMARY KEY (id)
);
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
CREATE INDEX ix_incident_resolved_at ON incident (resolved_at);
CREATE INDEX ix_incident_fingerprint ON incident (fingerprint);
CREATE INDEX ix_incident_state_id ON incident (state, id);
CREATE INDEX ix_incident_check_key ON incident (check_key);
CREATE INDEX ix_incident_state ON incident (state);
CREATE INDEX ix_incident_opened_at ON incident (opened_at);
CREATE INDEX ix_audit_log_at ON audit_log (at);
CREATE INDEX ix_skill_block_skill ON skill_block (skill);
CREATE INDEX ix_skill_block_target ON skill_block (target);
CREATE INDEX ix_conversation_chat ON conversation (chat);
CREATE INDEX ix_conversation_incident_id ON conversation (incident_id);
CREATE INDEX ix_channel_message_channel ON channel_message (channel);
CREATE UNIQUE INDEX ix_channel_message_chat_msg ON channel_message (channel, chat_id, message_id);
CREATE INDEX ix_channel_message_incident_id ON channel_message (incident_id);
CREATE INDEX ix_message_group_member_message_id ON message_group_member (message_id);
CREATE INDEX ix_message_group_member_channel ON message_group_member (channel);
CREATE INDEX ix_message_group_member_incident_id ON message_group_member (incident_id);
CREATE INDEX ix_message_group_member_chat_id ON message_group_member (chat_id);
CREATE INDEX ix_outbox_status ON outbox (status);
CREATE INDEX ix_outbox_channel ON outbox (channel);
CREATE INDEX ix_outbox_incident_id ON outbox (incident_id);
CREATE INDEX ix_in_flight_chat_id ON in_flight (chat_id);
CREATE INDEX ix_in_flight_channel ON in_flight (channel);
CREATE INDEX ix_inbound_update_at ON inbound_update (at);
CREATE INDEX ix_inbound_update_chat_id ON inbound_update (chat_id);
CREATE INDEX ix_mute_target ON mute (target);
CREATE INDEX ix_cluster_action_token ON cluster_action (token);
CREATE INDEX ix_cluster_action_kind ON cluster_action (kind);
CREATE UNIQUE INDEX ix_correlation_split_pair ON correlation_split (root_fingerprint, fingerprint);
CREATE INDEX ix_escalation_fired_incident_id ON escalation_fired (incident_id);
CREATE INDEX ix_quiet_held_incident_id ON quiet_held (incident_id);
CREATE INDEX ix_skill_ladder_skill ON skill_ladder (skill);
CREATE INDEX ix_page_outbox_incident_id ON page_outbox (incident_id);
CREATE INDEX ix_page_outbox_target ON page_outbox (target);
CREATE INDEX ix_page_outbox_status ON page_outbox (status);
CREATE INDEX ix_silence_expires_at ON silence (expires_at);
CREATE INDEX ix_incident_timeline_at ON incident_timeline (at);
CREATE INDEX ix_incident_timeline_incident_id ON incident_timeline (incident_id);
CREATE INDEX ix_remediation_run_skill ON remediation_run (skill);
CREATE INDEX ix_remediation_run_target ON remediation_run (target);
CREATE INDEX ix_remediation_run_incident_id ON remediation_run (incident_id);
CREATE INDEX ix_approval_incident_id ON approval (incident_id);
CREATE INDEX ix_human_command_status ON human_command (status);
CREATE INDEX ix_human_command_incident_id ON human_command (incident_id);
CREATE INDEX ix_trajectory_incident_id ON trajectory (incident_id);
CREATE INDEX ix_related_signal_incident_id ON related_signal (incident_id);
CREATE INDEX ix_related_signal_fp ON related_signal (fingerprint);
CREATE INDEX ix_related_signal_check_key ON related_signal (check_key);
CREATE INDEX ix_remedy_hold_incident_id ON remedy_hold (incident_id);
CREATE INDEX ix_remedy_hold_run_id ON remedy_hold (run_id);
CREATE INDEX ix_remedy_hold_live ON remedy_hold (closed_at, target);
CREATE INDEX ix_agent_step_run_id ON agent_step (run_id);
CREATE INDEX ix_agent_step_incident_id ON agent_step (incident_id);
COMMIT;
