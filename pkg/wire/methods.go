package wire

// Methods lists every method of the contract, in the order the package doc
// presents them. A daemon serves exactly these: pkg/daemon has a test that
// fails when one of them has no route or a route is not listed here, so a
// method is added in three places (its name and types here, its handler in
// the daemon's route table, its domain method). agent.hello still reads its
// list from the daemon's route table, which that test ties to this one.
// Read-only; notifications (Notify*) are not methods and are not listed.
var Methods = []string{
	MethodHello,
	// Sessions.
	MethodSpawn, MethodAsk, MethodList, MethodStatus, MethodStop, MethodRm,
	MethodReconcile, MethodLogs, MethodSend, MethodSnapshot, MethodWait,
	MethodResize, MethodAttach, MethodDiff, MethodApprove, MethodRestart, MethodView,
	// The screen.
	MethodScreenshot, MethodAct, MethodScreen, MethodRecordScreen,
	// Desktops.
	MethodDesktopNew, MethodDesktopList, MethodDesktopRm, MethodDesktopClip, MethodDesktopResize,
	// Channels.
	MethodRegisterChannel, MethodUnregisterChannel, MethodPushToChannel,
	MethodChannelAck, MethodChannelList, MethodChannelReply,
	// Agent CLIs' hooks.
	MethodHook,
	// State changes.
	MethodSubscribe,
}
