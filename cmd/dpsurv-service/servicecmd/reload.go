package servicecmd

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
)

// ReloadOnHangup makes SIGHUP reload the config file of `dpsurv run`
// instead of ending the process (the default action, exit status 129):
// the file and key are read and validated again, and the running service
// applies what it can (app.Service.Reload) and logs what needs a restart.
// A file that no longer loads is refused with its error; the service keeps
// running on the configuration in force. stop ends the handling.
func ReloadOnHangup(ctx context.Context, svc *app.Service, path string, log *zap.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Info("SIGHUP: reloading the config", zap.String("config", path))
				cfg, err := app.LoadConfig(path)
				if err != nil {
					log.Error("config reload refused; running on the config in force", zap.Error(err))
					continue
				}
				key, err := app.ReadKeyFile(cfg.Sanitizers.KeyFile, cfg.Sanitizers.AllowGroupReadableKeyFile)
				if err != nil {
					log.Error("config reload refused; running on the config in force", zap.Error(err))
					continue
				}
				svc.Reload(cfg, key)
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}
